#!/usr/bin/env python3
"""Open flame graph SVGs that stackmapctl wrote in headless Chromium through
chromedriver's WebDriver protocol (plain HTTP on 127.0.0.1), as a user
would: no script errors; the graph fills the window; hovering a frame
shows its count; a click zooms the frame to the full width; a search
highlights the matching frames and shows their share; a screenshot of
each is saved. For a differential graph, frames are red or blue with the
change in their details.

Usage: flamegraph-browser.py CHROMEDRIVER CHROMIUM OUTDIR PLAIN.svg DIFF.svg FUNCTION
Exit 0 when everything holds, 1 with the first failure on stderr.
"""

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

W, H = 1600, 900


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, chromedriver, chromium):
        self.port = free_port()
        self.proc = subprocess.Popen([chromedriver, f'--port={self.port}'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f'http://127.0.0.1:{self.port}'
        deadline = time.time() + 30
        while True:
            try:
                self.call('GET', '/status')
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        caps = {'capabilities': {'alwaysMatch': {
            'browserName': 'chrome',
            'goog:loggingPrefs': {'browser': 'ALL'},
            'goog:chromeOptions': {'binary': chromium, 'args': [
                '--headless=new', '--no-sandbox', '--disable-gpu',
                '--disable-dev-shm-usage', f'--window-size={W},{H}']}}}}
        self.sid = self.call('POST', '/session', caps)['sessionId']

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b'{}').get('value')
        except urllib.error.HTTPError as e:
            raise AssertionError(f'{method} {path}: {e.code} {e.read()[:300]!r}') from None

    def s(self, method, path, body=None):
        return self.call(method, f'/session/{self.sid}{path}', body)

    def js(self, script, *args):
        return self.s('POST', '/execute/sync', {'script': script, 'args': list(args)})

    def centre(self, index):
        """The middle of frame index's rect, in viewport pixels."""
        return self.js('var b = frames[arguments[0]].querySelector("rect").getBoundingClientRect();'
                       'return [Math.round(b.left + Math.min(b.width / 2, 20)),'
                       ' Math.round(b.top + b.height / 2)];', index)

    def pointer(self, x, y, click=False):
        """Move the mouse to (x, y) of the viewport, and click there if asked."""
        acts = [{'type': 'pointerMove', 'duration': 0, 'x': x, 'y': y, 'origin': 'viewport'}]
        if click:
            acts += [{'type': 'pointerDown', 'button': 0}, {'type': 'pointerUp', 'button': 0}]
        self.s('POST', '/actions', {'actions': [{
            'type': 'pointer', 'id': 'mouse', 'parameters': {'pointerType': 'mouse'},
            'actions': acts}]})
        self.s('DELETE', '/actions')

    def screenshot(self, path):
        with open(path, 'wb') as f:
            f.write(base64.b64decode(self.s('GET', '/screenshot')))

    def severe_logs(self):
        try:
            logs = self.s('POST', '/se/log', {'type': 'browser'}) or []
        except OSError:
            return []
        return [l['message'] for l in logs if l.get('level') == 'SEVERE']

    def close(self):
        try:
            self.s('DELETE', '')
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def open_svg(d, path, query=''):
    d.s('POST', '/url', {'url': 'file://' + os.path.abspath(path) + query})
    deadline = time.time() + 20
    while not d.js('return typeof frames !== "undefined" && frames && frames.length > 0;'):
        check(time.time() < deadline, f'{path}: the script did not start')
        time.sleep(0.1)
    errors = d.severe_logs()
    check(not errors, f'{path}: script errors: {errors}')
    check(d.js('return window.__errors || null;') is None, f'{path}: errors')
    width = d.js('return document.documentElement.getBoundingClientRect().width;')
    inner = d.js('return window.innerWidth;')
    check(abs(width - inner) < 2, f'{path}: {width} px wide in a {inner} px window')


def frame_info(d, index):
    return d.js('''var g = frames[arguments[0]], r = g.querySelector('rect');
        return {title: g.querySelector('title').textContent, w: parseFloat(r.getAttribute('width')),
                fill: r.getAttribute('fill'), d: parseInt(g.getAttribute('data-d')),
                hidden: g.classList.contains('hide')};''', index)


def plain(d, path, func, outdir):
    open_svg(d, path)
    # hover: the details line shows the frame's count
    n = d.js('''var best = -1, bw = 0; frames.forEach(function (g, i) {
        var w = parseFloat(g.querySelector('rect').getAttribute('width'));
        if (parseInt(g.getAttribute('data-d')) >= 2 && w > bw && w < W * 0.9) { best = i; bw = w; }
        }); return best;''')
    check(n >= 0, 'no frame deep and narrow enough to zoom')
    info = frame_info(d, n)
    x, y = d.centre(n)
    d.pointer(x, y)
    details = d.js('return document.getElementById("details").textContent;')
    check(details == info['title'] and ' events, ' in details,
          f'hover shows {details!r}, the frame is {info["title"]!r}')
    d.screenshot(os.path.join(outdir, 'flamegraph-hover.png'))
    # click: the frame fills the width
    d.pointer(x, y, click=True)
    zoomed = frame_info(d, n)
    full = d.js('return W - 2 * pad;')
    check(abs(zoomed['w'] - full) < 1, f'zoomed frame is {zoomed["w"]} px of {full}')
    check(zoomed['w'] > info['w'] + 1, 'the click did not zoom')
    d.screenshot(os.path.join(outdir, 'flamegraph-zoom.png'))
    # search: matches highlighted, their share shown
    open_svg(d, path, '?s=' + func)
    hits = d.js('''return frames.filter(function (g) {
        return g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)'; })
        .map(function (g) { return label(g); });''')
    check(hits and all(func in h for h in hits), f'search {func}: highlighted {hits[:5]}')
    matched = d.js('return document.getElementById("matched").textContent;')
    check(matched.startswith('Matched: ') and matched.endswith('%') and
          0 < float(matched[9:-1]) <= 100, f'search shows {matched!r}')
    d.screenshot(os.path.join(outdir, 'flamegraph-search.png'))
    print(f'# plain: hover {details!r}; zoom to {zoomed["w"]:.0f} px; search {func}: {matched}')


def diff(d, path, outdir):
    open_svg(d, path)
    fills = d.js('''return frames.map(function (g) {
        return [g.querySelector('rect').getAttribute('fill'), g.querySelector('title').textContent]; });''')
    check(all('change ' in t for _, t in fills[1:]), 'diff frames lack their change')
    coloured = [f for f, _ in fills if f != 'rgb(225,225,225)']
    check(coloured and all(f.startswith('rgb(255,') or f.endswith(',255)') for f in coloured),
          f'diff colours: {coloured[:5]}')
    d.pointer(*d.centre(1))
    details = d.js('return document.getElementById("details").textContent;')
    check('before ' in details and 'change ' in details, f'diff hover shows {details!r}')
    d.screenshot(os.path.join(outdir, 'flamegraph-diff.png'))
    print(f'# diff: {len(coloured)} of {len(fills)} frames coloured; hover {details!r}')


def main():
    chromedriver, chromium, outdir, plain_svg, diff_svg, func = sys.argv[1:7]
    d = Driver(chromedriver, chromium)
    try:
        plain(d, plain_svg, func, outdir)
        diff(d, diff_svg, outdir)
    except AssertionError as e:
        print(f'FAIL: {e}', file=sys.stderr)
        return 1
    finally:
        d.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
