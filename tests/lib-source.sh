# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Shared by the source checks (tests/check-*.sh), which read the tree as
# text: sourced, not run.

# strip FILE: FILE without its comments (lines kept, so numbers stay right);
# string literals are left as they are.
strip() {
	awk '{
		out = ""; s = $0
		while (s != "") {
			if (incomment) {
				i = index(s, "*/")
				if (!i) { s = ""; break }
				s = substr(s, i + 2); incomment = 0; continue
			}
			a = index(s, "/*"); b = index(s, "//")
			if (a && (!b || a < b)) { out = out substr(s, 1, a - 1) " "; s = substr(s, a + 2); incomment = 1; continue }
			if (b) { out = out substr(s, 1, b - 1); s = ""; break }
			out = out s; s = ""
		}
		print out
	}' "$1"
}
