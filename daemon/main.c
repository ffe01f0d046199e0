/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapd: records kernel trace events with their stacks from tracefs
 * into rotated, self-contained segments. Runs in the foreground until
 * SIGTERM or SIGINT; SIGHUP reloads the configuration.
 */
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "config-check.h"
#include "crash-buffer.h"
#include "ctl-commands.h"
#include "ctl.h"
#include "hook.h"
#include "log.h"
#include "notify.h"
#include "recorder.h"
#include "util.h"

#define DEFAULT_CONFIG SYSCONFDIR "/stackmapd.conf"
#define TRACEFS_DEFAULT "/sys/kernel/tracing"

struct daemon {
	const char *config_path;
	const char *directory_override;
	struct config cfg;
	struct config old_cfg;		/* kept alive until the next reload: the recorder borrowed it */
	const struct config *cfg_in_force;	/* &cfg, for the control commands */
	struct recorder *rec;
	struct ctl *ctl;
	struct commands commands;
	sd_event *event;
	sd_event_source *status_timer, *notify_timer, *watchdog_timer;
	struct hook *hook;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: stackmapd [OPTIONS]\n\n"
		"Record kernel trace events and their stacks into rotated segments.\n\n"
		"  -c, --config FILE     configuration file (default %s)\n"
		"      --check           validate the configuration and exit\n"
		"  -D, --directory DIR   archive directory (overrides [archive] directory)\n"
		"  -d, --debug           log debug messages\n"
		"  -h, --help            this help\n"
		"      --version         print the version\n\n"
		"Signals: TERM/INT stop (flushing every CPU buffer), HUP reloads the configuration.\n"
		"Exit status: 0 stopped cleanly, 1 failure, 78 invalid configuration.\n",
		DEFAULT_CONFIG);
}

static const char *tracing_dir_for_checks(void)
{
	struct stat st;

	return stat(TRACEFS_DEFAULT "/events", &st) == 0 ? TRACEFS_DEFAULT : NULL;
}

/*
 * Parse and check the config into *c: the file's own rules, then what the
 * running kernel can tell (when tracefs is mounted). --check, startup and
 * reload all come here. Returns 0 or -EINVAL with *ret_error set.
 */
static int load_config(struct daemon *d, struct config *c, char **ret_error)
{
	const char *tracing_dir = tracing_dir_for_checks();
	int r;

	r = config_init(c);
	if (r < 0)
		return r;
	r = config_load(c, d->config_path, ret_error);
	if (r < 0)
		return r;
	if (d->directory_override) {
		char *dir = strdup(d->directory_override);

		if (!dir)
			return -ENOMEM;
		free(c->directory);
		c->directory = dir;
	}
	r = config_check(c, ret_error);
	if (r < 0 || !tracing_dir)
		return r;
	return config_check_tracefs(c, tracing_dir, NULL, ret_error);
}

/* Run the configured hook with the finished segment's path; never blocks recording. */
static void on_segment(void *userdata, const char *path)
{
	struct daemon *d = userdata;
	int r;

	r = hook_run(d->hook, d->cfg.hook_argv, path);
	if (r > 0)
		log_debug("%d segment hooks still running: the one for '%s' waits", HOOK_MAX_RUNNING,
			  path);
	else if (r < 0)
		log_errno(LOG_WARNING, r, "cannot run the segment hook, continuing");
}

static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	log_info("received signal %d, stopping", (int)si->ssi_signo);
	notify_stopping();
	return sd_event_exit(d->event, 0);
}

/*
 * Parse the file into a fresh config and swap it in only if it is valid.
 * Returns 0 or -errno with *ret_error set; *ret_restart lists the keys that
 * need a restart (NULL if none).
 */
static int reload(struct daemon *d, char **ret_error, char **ret_restart)
{
	struct config next = { 0 };
	int r;

	notify_reloading();
	r = load_config(d, &next, ret_error);
	if (r < 0) {
		config_done(&next);
		notify_ready();
		return r;
	}
	if (config_needs_restart(&d->cfg, &next, ret_restart))
		config_keep_running(&next, &d->cfg);
	/* the recorder borrows the config in force: swap first, then tell it */
	config_done(&d->old_cfg);
	d->old_cfg = d->cfg;
	d->cfg = next;
	r = recorder_reload(d->rec, &d->cfg);
	if (r < 0) {
		next = d->cfg;
		d->cfg = d->old_cfg;
		d->old_cfg = (struct config){ 0 };
		(void)recorder_reload(d->rec, &d->cfg);
		config_done(&next);
		notify_ready();
		return r;
	}
	if (d->ctl)
		(void)ctl_set_group(d->ctl, d->cfg.socket_group);
	notify_ready();
	return 0;
}

static int reload_request(void *userdata, char **ret_error, char **ret_restart)
{
	struct daemon *d = userdata;
	int r = reload(d, ret_error, ret_restart);

	if (r < 0)
		log_err("reload failed, keeping the running configuration: %s",
			*ret_error ? *ret_error : strerror(-r));
	else if (*ret_restart)
		log_warn("reloaded; these settings take effect only after a restart: %s", *ret_restart);
	else
		log_info("reloaded '%s'", d->config_path);
	return r;
}

static int on_reload_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	_cleanup_free_ char *error = NULL, *restart = NULL;

	(void)reload_request(userdata, &error, &restart);
	return 0;
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	char line[256];

	(void)recorder_summary(d->rec, line, sizeof(line));
	log_info("%s", line);
	return sd_event_source_set_time_relative(s, d->cfg.status_interval_usec);
}

/* STATUS= stays current: a one-line summary every few seconds. */
static int on_notify_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	char line[256];

	(void)recorder_summary(d->rec, line, sizeof(line));
	notify_status("%s", line);
	return sd_event_source_set_time_relative(s, 5 * USEC_PER_SEC);
}

static int on_watchdog_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	static struct log_ratelimit rl = LOG_RATELIMIT_INIT;
	struct daemon *d = userdata;
	uint64_t interval = 0;
	const char *why;

	/* no ping while a CPU is not recorded: the service manager restarts us */
	if (recorder_healthy(d->rec, &why))
		notify_watchdog();
	else
		log_ratelimit_err_errno(&rl, -EIO, "not recording every CPU (%s): watchdog not "
					"pinged", why);
	(void)notify_watchdog_usec(&interval);
	return sd_event_source_set_time_relative(s, MAX(interval / 2, USEC_PER_SEC / 10));
}

static int setup_notify(struct daemon *d)
{
	uint64_t interval = 0;
	int r;

	r = sd_event_add_time_relative(d->event, &d->notify_timer, CLOCK_MONOTONIC, 5 * USEC_PER_SEC,
				       0, on_notify_timer, d);
	if (r >= 0)
		r = sd_event_source_set_enabled(d->notify_timer, SD_EVENT_ON);
	if (r >= 0 && notify_watchdog_usec(&interval) > 0 && interval) {
		r = sd_event_add_time_relative(d->event, &d->watchdog_timer, CLOCK_MONOTONIC,
					       interval / 2, 0, on_watchdog_timer, d);
		if (r >= 0)
			r = sd_event_source_set_enabled(d->watchdog_timer, SD_EVENT_ON);
	}
	return r;
}

static int setup_loop(struct daemon *d)
{
	sigset_t ss;
	int r;

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigaddset(&ss, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
		return -errno;
	r = sd_event_default(&d->event);
	if (r < 0)
		return r;
	r = hook_new(d->event, &d->hook);
	if (r < 0)
		return r;
	r = sd_event_add_signal(d->event, NULL, SIGTERM, on_stop_signal, d);
	if (r >= 0)
		r = sd_event_add_signal(d->event, NULL, SIGINT, on_stop_signal, d);
	if (r >= 0)
		r = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload_signal, d);
	if (r >= 0)
		r = sd_event_add_time_relative(d->event, &d->status_timer, CLOCK_MONOTONIC,
					       d->cfg.status_interval_usec, 0, on_status_timer, d);
	if (r >= 0)
		r = sd_event_source_set_enabled(d->status_timer, SD_EVENT_ON);
	return r;
}

/* Read argv into d and *ret_check: -1 to go on, else the exit status. */
static int parse_args(struct daemon *d, bool *ret_check, int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'C' },
		{ "directory", required_argument, NULL, 'D' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:D:dh", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			d->config_path = optarg;
			break;
		case 'C':
			*ret_check = true;
			break;
		case 'D':
			d->directory_override = optarg;
			break;
		case 'd':
			log_set_max_level(LOG_DEBUG);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("stackmapd %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return -1;
}

/*
 * Everything that runs until a stop: the loop, the control socket (first:
 * a failure there must not leave tracefs touched), the recorder and the
 * status timers. Logs what fails. Returns 0 or -errno.
 */
static int daemon_start(struct daemon *d)
{
	static const struct ctl_handlers handlers = { .request = commands_request };
	_cleanup_free_ char *error = NULL;
	char line[256];
	int r;

	r = setup_loop(d);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot set up the event loop");
	d->cfg_in_force = &d->cfg;
	d->commands = (struct commands){
		.cfg = &d->cfg_in_force,
		.hook = d->hook,
		.reload = reload_request,
		.userdata = d,
	};
	r = ctl_new(d->event, d->cfg.socket_path, d->cfg.socket_group, &handlers, &d->commands,
		    &d->ctl);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot create the control socket '%s'",
				 d->cfg.socket_path);
	r = recorder_new(&d->cfg, &d->rec, &error);
	if (r < 0) {
		log_err("%s", error ? error : strerror(-r));
		return r;
	}
	d->commands.rec = d->rec;
	r = recorder_start(d->rec, d->event, on_segment, d);
	if (r < 0) {
		notify_errno(-r);
		return r;
	}
	r = setup_notify(d);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the status timers");
		recorder_stop(d->rec);
		return r;
	}
	(void)recorder_summary(d->rec, line, sizeof(line));
	notify_status("%s", line);
	return 0;
}

/* Free what daemon_start() made, whatever it got to. */
static void daemon_done(struct daemon *d)
{
	d->ctl = ctl_free(d->ctl);
	d->rec = recorder_free(d->rec);
	d->hook = hook_free(d->hook);
	sd_event_source_disable_unref(d->status_timer);
	sd_event_source_disable_unref(d->notify_timer);
	sd_event_source_disable_unref(d->watchdog_timer);
	sd_event_unref(d->event);
	config_done(&d->cfg);
	config_done(&d->old_cfg);
}

int main(int argc, char **argv)
{
	struct daemon d = { .config_path = DEFAULT_CONFIG };
	_cleanup_free_ char *error = NULL;
	bool check = false;
	int r;

	r = parse_args(&d, &check, argc, argv);
	if (r >= 0)
		return r;
	if (notify_journal_stderr())
		log_set_journal(true);

	/* Nothing touches tracefs before the configuration is known to be valid. */
	r = load_config(&d, &d.cfg, &error);
	if (r < 0) {
		log_err("%s", error ? error : strerror(-r));
		config_done(&d.cfg);
		return CONFIG_EXIT_INVALID;
	}
	if (check) {
		_cleanup_free_ char *why = NULL;

		/* the crash buffer needs kernel arguments: a warning, the file is still valid */
		if (d.cfg.crash_buffer_size && tracing_dir_for_checks() &&
		    crash_buffer_probe(tracing_dir_for_checks(), &why) < 0)
			log_warn("%s: crash.buffer_size: %s", d.config_path,
				 why ?: "the crash buffer is not available");
		printf("%s: configuration is valid\n", d.config_path);
		config_done(&d.cfg);
		return 0;
	}

	r = daemon_start(&d);
	if (r >= 0) {
		/* every CPU is being read: only now is the service ready */
		notify_ready();
		r = sd_event_loop(d.event);
		if (r < 0)
			log_errno(LOG_ERR, r, "event loop failed");
		notify_stopping();
		d.ctl = ctl_free(d.ctl);
		recorder_stop(d.rec);
	}
	daemon_done(&d);
	/* what only the kernel could tell about the config is still a config error */
	if (r == -EINVAL)
		return CONFIG_EXIT_INVALID;
	return r < 0 ? 1 : 0;
}
