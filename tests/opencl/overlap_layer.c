/* SPDX-License-Identifier: MIT */
/*
 * A test ICD layer that makes commands of out-of-order queues overlap.
 *
 * Loaded below the opencl plugin's layer (OpenclLanes puts it in
 * OPENCL_LAYERS before the plugin starts, and the plugin puts itself
 * first), it answers CL_PROFILING_COMMAND_START of a command on an
 * out-of-order queue with the command's CL_PROFILING_COMMAND_QUEUED time:
 * every such command then seems to have run from its enqueue to its real
 * end. Commands enqueued back to back, each longer than the enqueue gap,
 * overlap partly, as they do on a device that runs them at once, so the
 * plugin must draw them on lanes of their own. Everything else passes
 * through unchanged.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <string.h>

#include <CL/cl_icd.h>
#include <CL/cl_layer.h>

#define EXPORT __attribute__((visibility("default")))

static struct _cl_icd_dispatch next, ours;

static cl_int CL_API_CALL ov_profiling(cl_event ev, cl_profiling_info name, size_t size,
                                       void *value, size_t *size_ret)
{
    if (name == CL_PROFILING_COMMAND_START && value && size >= sizeof(cl_ulong)) {
        cl_command_queue q = NULL;
        cl_command_queue_properties p = 0;
        if (next.clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) ==
                CL_SUCCESS && q &&
            next.clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof p, &p, NULL) ==
                CL_SUCCESS &&
            (p & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
            name = CL_PROFILING_COMMAND_QUEUED;
    }
    return next.clGetEventProfilingInfo(ev, name, size, value, size_ret);
}

EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                                      size_t param_value_size,
                                                      void *param_value,
                                                      size_t *param_value_size_ret)
{
    cl_layer_api_version v = CL_LAYER_API_VERSION_100;
    if (param_name != CL_LAYER_API_VERSION)
        return CL_INVALID_VALUE;
    if (param_value) {
        if (param_value_size < sizeof v)
            return CL_INVALID_VALUE;
        memcpy(param_value, &v, sizeof v);
    }
    if (param_value_size_ret)
        *param_value_size_ret = sizeof v;
    return CL_SUCCESS;
}

EXPORT CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                   const struct _cl_icd_dispatch *target,
                                                   cl_uint *num_entries_ret,
                                                   const struct _cl_icd_dispatch **ret)
{
    const cl_uint all = sizeof next / sizeof(void *);
    if (!target || !num_entries_ret || !ret)
        return CL_INVALID_VALUE;
    cl_uint n = num_entries < all ? num_entries : all;
    memcpy(&next, target, n * sizeof(void *));
    ours = next;
    if (next.clGetEventProfilingInfo && next.clGetEventInfo && next.clGetCommandQueueInfo)
        ours.clGetEventProfilingInfo = ov_profiling;
    *num_entries_ret = n;
    *ret = &ours;
    return CL_SUCCESS;
}
