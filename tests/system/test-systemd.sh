#!/bin/bash
. "$top_srcdir/tests/lib.sh"
skip "not written yet"
