"""The host-load record's vocabulary: runners/shared/host_load.py writes it (records.HOST_LOAD), report/shared/host_load.py
reads it."""

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of the record's CPU tick counts (/proc's)
COUNTERS = ("total", "busy", "steal", "iowait", "rally", "elasticsearch", "foreign", "major_faults")
