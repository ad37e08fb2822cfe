/* settings.h - core's own settings (the mode, the settings file, logging, the
 * library's path, PTX retries): rows for core/config.h's table, which explains
 * the columns. Each feature folder keeps its own rows in its settings.h. */
#ifndef GA_CORE_SETTINGS_H
#define GA_CORE_SETTINGS_H

#define GA_CORE_SETTINGS(X, W, R)                                                                   \
    X(GPUACCEL, MODE, mode, "safe", "",                                                             \
      "the set of features: 0 none, safe the defaults, all every one; a feature's own switch wins") \
    X(GPUACCEL_CONFIG, STR, config, "", "",                                                         \
      "read settings (NAME=VALUE lines) from FILE; the environment wins")                           \
    X(GPUACCEL_LOG, LEVEL, log_level, "warn", "", "the least severe messages written")              \
    X(GPUACCEL_LOG_FILE, STR, log_file, "", "", "append messages to this file, not stderr")         \
    X(GPUACCEL_LIB, STR, lib, "", "", "the library `gpuaccel` preloads (the command only)")         \
    X(GPUACCEL_PTX_RETRY, BOOL, ptx_retry, "1", "",                                                 \
      "retry PTX the driver refuses for its .version with the highest version it takes")

#endif
