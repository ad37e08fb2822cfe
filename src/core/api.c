/* api.c - the library's own exported functions (include/gpuaccel.h). */
#include "gpuaccel.h"

#include "core/stats.h"

GA_EXPORT const char *gpuaccel_version(void)
{
    return PACKAGE_VERSION;
}

extern const char ga_kernels_table[];
extern const size_t ga_kernels_fatbin_size;

GA_EXPORT const char *gpuaccel_kernels_table(void)
{
    return ga_kernels_fatbin_size ? ga_kernels_table : "";
}

GA_EXPORT uint64_t gpuaccel_calls(const char *entry_point)
{
    int id = entry_point ? ga_entry_by_name(entry_point) : -1;
    return id < 0 ? 0 : ga_stats_calls((ga_id_t)id);
}
