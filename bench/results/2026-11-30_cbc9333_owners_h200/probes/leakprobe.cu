// Call 27: which CUDA object leaks host memory when made and destroyed?
// Each case runs 20 untimed rounds, then 200 counted ones, and prints the
// bytes malloc holds (mallinfo2, all arenas) gained per round.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <malloc.h>

#include <cstdio>
#include <functional>
#include <thread>

__global__ void Touch(float* p) { if (p) p[threadIdx.x] += 1.0f; }

#define CHECK(x) do { auto check_status_ = (x); if (check_status_ != 0) { std::printf("%s failed: %d\n", #x, (int)check_status_); std::exit(1); } } while (0)

static size_t InUse() { return mallinfo2().uordblks; }

static void Case(const char* name, const std::function<void()>& round) {
  for (int i = 0; i < 20; ++i) round();
  const size_t before = InUse();
  for (int i = 0; i < 200; ++i) round();
  const double per = (double(InUse()) - double(before)) / 200.0;
  std::printf("%-44s %+10.1f bytes per round\n", name, per);
  std::fflush(stdout);
}

static void CaptureAndReplay(cudaStream_t s, float* p, cudaStreamCaptureMode mode) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, mode));
  Touch<<<1, 32, 0, s>>>(p);
  CHECK(cudaMemsetAsync(p, 0, 128, s));
  Touch<<<1, 32, 0, s>>>(p);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphUpload(exec, s));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
}

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  float* p = nullptr;
  CHECK(cudaMalloc(&p, 1 << 20));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  Case("nothing", [] {});
  Case("thread: cudaSetDevice, launch, sync", [p] {
    std::thread t([p] { cudaSetDevice(0); Touch<<<1, 32>>>(p); cudaDeviceSynchronize(); });
    t.join();
  });
  Case("thread: own stream, launch, sync", [p] {
    std::thread t([p] {
      cudaSetDevice(0);
      cudaStream_t own;
      cudaStreamCreate(&own);
      Touch<<<1, 32, 0, own>>>(p);
      cudaStreamSynchronize(own);
      cudaStreamDestroy(own);
    });
    t.join();
  });
  Case("stream create/destroy", [] {
    cudaStream_t x;
    CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    CHECK(cudaStreamDestroy(x));
  });
  Case("event create/destroy (blocking sync)", [] {
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
    CHECK(cudaEventDestroy(e));
  });
  Case("event create/record/sync/destroy", [s] {
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK(cudaEventRecord(e, s));
    CHECK(cudaEventSynchronize(e));
    CHECK(cudaEventDestroy(e));
  });
  Case("capture (global), instantiate, replay, destroy", [s, p] {
    CaptureAndReplay(s, p, cudaStreamCaptureModeGlobal);
  });
  Case("capture (thread local) ...", [s, p] {
    CaptureAndReplay(s, p, cudaStreamCaptureModeThreadLocal);
  });
  Case("capture (relaxed) ...", [s, p] { CaptureAndReplay(s, p, cudaStreamCaptureModeRelaxed); });
  Case("new stream + capture + destroy stream", [p] {
    cudaStream_t x;
    CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    CaptureAndReplay(x, p, cudaStreamCaptureModeThreadLocal);
    CHECK(cudaStreamDestroy(x));
  });
  Case("child graph node in a parent, instantiate", [s, p] {
    cudaGraph_t child, parent;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    Touch<<<1, 32, 0, s>>>(p);
    CHECK(cudaStreamEndCapture(s, &child));
    CHECK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t node;
    CHECK(cudaGraphAddChildGraphNode(&node, parent, nullptr, 0, child));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, parent, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(parent));
    CHECK(cudaGraphDestroy(child));
  });
  Case("cudaMalloc/cudaFree 1 MiB", [] {
    void* q;
    CHECK(cudaMalloc(&q, 1 << 20));
    CHECK(cudaFree(q));
  });
  Case("cudaHostAlloc/cudaFreeHost 64 KiB", [] {
    void* q;
    CHECK(cudaHostAlloc(&q, 1 << 16, cudaHostAllocPortable));
    CHECK(cudaFreeHost(q));
  });
  Case("cudaHostRegister/Unregister 64 KiB", [] {
    static char buffer[1 << 16] __attribute__((aligned(4096)));
    CHECK(cudaHostRegister(buffer, sizeof buffer, cudaHostRegisterPortable));
    CHECK(cudaHostUnregister(buffer));
  });
  Case("cublasLtCreate/Destroy", [] {
    cublasLtHandle_t h;
    CHECK(cublasLtCreate(&h));
    CHECK(cublasLtDestroy(h));
  });
  Case("cudnnCreate/Destroy", [] {
    cudnnHandle_t h;
    CHECK(cudnnCreate(&h));
    CHECK(cudnnDestroy(h));
  });
  Case("cudnnCreate/SetStream/Destroy", [s] {
    cudnnHandle_t h;
    CHECK(cudnnCreate(&h));
    CHECK(cudnnSetStream(h, s));
    CHECK(cudnnDestroy(h));
  });
  return 0;
}
