/* wrappers.h - the exported wrapper of every entry point, by id. */
#ifndef GA_WRAPPERS_H
#define GA_WRAPPERS_H

#include "core/runtime.h"

extern void *const ga_wrappers[GA_N_ENTRIES];

#endif
