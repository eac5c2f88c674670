// Level Zero host loops, with minimal declarations of the entry points used
// (the layout of ze_api.h's handles and ze_group_count_t).
#include <stddef.h>
#include <stdint.h>

typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_command_queue_handle_t *ze_command_queue_handle_t;
typedef struct _ze_kernel_handle_t *ze_kernel_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;
typedef struct _ze_fence_handle_t *ze_fence_handle_t;
typedef int ze_result_t;
typedef struct {
  uint32_t groupCountX, groupCountY, groupCountZ;
} ze_group_count_t;

ze_result_t zeCommandListReset(ze_command_list_handle_t);
ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t, uint32_t, size_t,
                                     const void *);
ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t,
                                            ze_kernel_handle_t,
                                            const ze_group_count_t *,
                                            ze_event_handle_t, uint32_t,
                                            ze_event_handle_t *);
ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t, ze_event_handle_t,
                                       uint32_t, ze_event_handle_t *);
ze_result_t zeCommandListClose(ze_command_list_handle_t);
ze_result_t zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t,
                                              uint32_t,
                                              ze_command_list_handle_t *,
                                              ze_fence_handle_t);
ze_result_t zeCommandQueueSynchronize(ze_command_queue_handle_t, uint64_t);

// The same two launches every iteration: recorded once.
void step(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
          ze_kernel_handle_t Scale, ze_kernel_handle_t Axpy, float *X,
          float *Y, int N, int Iters) {
  ze_group_count_t G = {(uint32_t)N / 256, 1, 1};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeKernelSetArgumentValue(Scale, 0, sizeof X, &X);
    zeKernelSetArgumentValue(Scale, 1, sizeof N, &N);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeKernelSetArgumentValue(Axpy, 0, sizeof Y, &Y);
    zeKernelSetArgumentValue(Axpy, 1, sizeof X, &X);
    zeCommandListAppendLaunchKernel(List, Axpy, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

// Declined: the argument is the iteration.
void step_shift(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                ze_kernel_handle_t Scale, int Iters) {
  ze_group_count_t G = {4, 1, 1};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeKernelSetArgumentValue(Scale, 1, sizeof I, &I);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

// Declined: the list is submitted again without waiting for it.
void step_nowait(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                 ze_kernel_handle_t Scale, int Iters) {
  ze_group_count_t G = {4, 1, 1};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
  }
}

// A barrier orders the second launch after the first: recorded with them.
void step_barrier(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                  ze_kernel_handle_t Scale, ze_kernel_handle_t Axpy, int Iters) {
  ze_group_count_t G = {8, 1, 1};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListAppendBarrier(List, 0, 0, 0);
    zeCommandListAppendLaunchKernel(List, Axpy, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

// Declined: the barrier signals an event (which the host would have to reset
// between executions).
void step_barrier_event(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                        ze_kernel_handle_t Scale, ze_event_handle_t Done, int Iters) {
  ze_group_count_t G = {8, 1, 1};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListAppendBarrier(List, Done, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

// Declined: the argument and the group count are read through stack addresses
// that change from iteration to iteration (a list recorded once would replay
// the first iteration's).
void step_indexed_args(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                       ze_kernel_handle_t Scale, int N, int Iters) {
  ze_group_count_t G = {4, 1, 1};
  int Vals[4] = {N, N + 1, N + 2, N + 3};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeKernelSetArgumentValue(Scale, 0, sizeof(int), &Vals[I & 3]);
    zeCommandListAppendLaunchKernel(List, Scale, &G, 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}

void step_indexed_groups(ze_command_list_handle_t List, ze_command_queue_handle_t Q,
                         ze_kernel_handle_t Scale, int N, int Iters) {
  ze_group_count_t Gs[2] = {{1, 1, 1}, {(uint32_t)N, 2, 1}};
  for (int I = 0; I < Iters; ++I) {
    zeCommandListReset(List);
    zeKernelSetArgumentValue(Scale, 0, sizeof N, &N);
    zeCommandListAppendLaunchKernel(List, Scale, &Gs[I & 1], 0, 0, 0);
    zeCommandListClose(List);
    zeCommandQueueExecuteCommandLists(Q, 1, &List, 0);
    zeCommandQueueSynchronize(Q, UINT64_MAX);
  }
}
