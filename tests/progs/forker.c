/* forker.c - fork() in a program that already used CUDA, while another thread
 * keeps calling the driver: the child must not inherit a held lock of the
 * library, and must be able to use CUDA afresh (as far as the driver allows:
 * a real driver refuses a child whose parent initialized it, and the child
 * must then see the driver's own error, not a hang or a crash).
 * Links -lcuda. Prints "parent ok=1" and "child rc=N". */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void *churn(void *arg)
{
    (void)arg;
    CUcontext ctx;
    CUdevice dev;
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    while (!atomic_load(&stop)) {
        CUdeviceptr p;
        unsigned v;
        if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS) {
            cuMemsetD32(p, 7, 1024);
            cuMemcpyDtoH(&v, p, 4);
            cuMemFree(p);
        }
    }
    return NULL;
}

static int child(void)
{
    /* CUDA afresh: whatever the driver answers, the child must get an answer. */
    CUresult r = cuInit(0);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    if (r == CUDA_SUCCESS && (r = cuDeviceGet(&dev, 0)) == CUDA_SUCCESS &&
        (r = cuDevicePrimaryCtxRetain(&ctx, dev)) == CUDA_SUCCESS &&
        (r = cuCtxSetCurrent(ctx)) == CUDA_SUCCESS && (r = cuMemAlloc(&p, 64)) == CUDA_SUCCESS)
        r = cuMemFree(p);
    return r == CUDA_SUCCESS ? 0 : 10 + (int)r % 100;
}

int main(void)
{
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS)
        return fprintf(stderr, "SKIP: no CUDA device (cuInit returned %d)\n", (int)r), 77;
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL);
    int status = 0, ok = 1;
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(child());
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
            ok = 0;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("parent ok=%d\nchild rc=%d\n", ok, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return ok ? 0 : 1;
}
