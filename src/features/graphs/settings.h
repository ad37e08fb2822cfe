/* settings.h - graphs' settings: the rows of core/config.h's table that graphs/
 * owns (X: a setting; W: a switch, the setting it cannot act without, and why; R:
 * the range of a number; config.h explains the columns). autogen.sh gathers every
 * feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_GRAPHS_H
#define GA_SETTINGS_GRAPHS_H

#define GA_SETTINGS_graphs(X, W, R)                                     \
    X(GPUACCEL_GRAPHS, FEATURE, graphs, "0", "",                        \
      "replay repeated launch sequences as CUDA graphs")                \
    X(GPUACCEL_GRAPH_MIN, UINT, graph_min, "5", "GPUACCEL_GRAPHS",      \
      "fewest kernels in a sequence worth a graph")                     \
    R(GPUACCEL_GRAPH_MIN, "2", "4096")                                  \
    X(GPUACCEL_GRAPH_CACHE, UINT, graph_cache, "64", "GPUACCEL_GRAPHS", \
      "most graphs kept instantiated")                                  \
    R(GPUACCEL_GRAPH_CACHE, "1", "")

#endif
