/* report.h - gpuaccel report: a profile's report again, or the profiles of
 * several processes (a multi-process or multi-rank run) merged into one. */
#ifndef GA_TOOLS_REPORT_H
#define GA_TOOLS_REPORT_H

#include <stdbool.h>

/* args: one BASE (GPUACCEL_PROFILE's value, or BASE.json when that file is
 * missing: every profile of the run) or one or more FILE.json (those files).
 * One profile prints its own report, several a merged one; json prints the
 * merged view as JSON either way. Returns the exit status: 0, or 2 with one
 * line on stderr naming the file that is missing or not a profile. */
int report_main(char *const *args, int n, bool json);

#endif
