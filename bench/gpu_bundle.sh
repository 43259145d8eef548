#!/usr/bin/env bash
# Builds GraphServe's GPU tests and tools here (no GPU needed) and packs them,
# with the non-system shared libraries they load, for the H200 machine, which
# has the CUDA driver and libraries but no Bazel, gRPC or ONNX.
#
#   bench/gpu_bundle.sh            -> .bundle/graphserve-gpu.tar.xz
#
# The binaries lose their symbol tables too (strip -s): with them the tarball
# outgrows the 64 MiB the device tool carries. GPU_BUNDLE_SYMBOLS=1 keeps
# them, for CPU profiles with function names (bench/serve_profile.sh), in a
# bundle that then needs fewer tools to fit.
#
# On the GPU machine, bench/gpu_check.sh unpacks and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST_TARGETS=(
  //common:cuda_handles_test
  //common:cuda_device_guard_test
  //tensor_holder:weight_store_test
  //tensor_holder:stream_arena_test
  //tensor_holder:io_buffers_test
  //runtime/cuda:op_kernels_test
  //runtime/cuda:gemm_test
  //runtime/cuda:nn_kernels_test
  //runtime/cuda:cudnn_conv_test
  //runtime/cuda:cudnn_attention_test
  //runtime/cuda:slot_lanes_test
  //runtime/cuda:cuda_executor_test
  //runtime/cuda:fused_gelu_test
  //runtime/cuda:pointwise_test
  //capture:stream_capture_test
  //capture:graph_set_test
  //capture:schedule_choice_test
  //capture:pipeline_graphs_test
  //tests:server_e2e_test
  //tests:shared_memory_e2e_test
  //tests:cuda_fault_e2e_test
  //server:shared_memory_test
  //server:request_validation_test
  //server:graph_set_runner_test
  //server:graph_set_runner_lost_context_test
  //server:ensemble_pipeline_test
  //server:sequence_batcher_test
  //server:served_model_cuda_test
  //client:cuda_shared_memory_test
)
TOOL_TARGETS=(
  //tests:onnx_conformance
  //bench:runtime_bench
  //bench:ensemble_bench
  //bench:launch_overhead
  //capture_cli:graphserve-capture
  //examples:make_example_models
  //examples:run_example_models
  //examples:make_demo_repository
  //server:graphserve
  //client:graphserve-client
  //bench:replay_bench
  //bench:conv_tuning_probe
  //bench:core_bench
  //bench:grpc_path_bench
)

# Project libraries linked statically so binaries run outside bazel-bin.
bazel build -c opt --dynamic_mode=off "${TEST_TARGETS[@]}" "${TOOL_TARGETS[@]}"
# The opt output folder itself, not the bazel-bin link, which another build
# in this workspace (a fastbuild `bazel test`) may have repointed meanwhile.
bin_dir=$(bazel info -c opt --dynamic_mode=off bazel-bin)

stage=.bundle/graphserve-gpu
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/testdata"
for target in "${TEST_TARGETS[@]}" "${TOOL_TARGETS[@]}"; do
  path="$bin_dir/$(echo "${target#//}" | tr ':' '/')"
  cp "$path" "$stage/bin/"
done
chmod u+w "$stage"/bin/*
if [[ "${GPU_BUNDLE_SYMBOLS:-0}" == 1 ]]; then
  strip --strip-debug "$stage"/bin/*
else
  strip -s "$stage"/bin/*
fi

# Shared libraries the GPU machine lacks: everything outside glibc, the C++
# runtime and CUDA's own libraries (the driver machine has those).
system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread|libdl\.|librt\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink)'
ldd "$stage"/bin/* | awk '/=>/ {print $1, $3}' | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $system_lib ]] && [[ -f "$path" ]]; then cp -L "$path" "$stage/lib/"; fi
done

# gperftools' CPU profiler, preloaded by bench/serve_profile.sh (the GPU
# machine has no profiler of its own), with the unwinder it loads: in a
# folder of their own, off the library path of everything else.
profiler=/usr/lib/x86_64-linux-gnu/libprofiler.so.0
if [[ -f "$profiler" ]]; then
  mkdir -p "$stage/profiler"
  cp -L "$profiler" "$stage/profiler/"
  ldd "$profiler" | awk '/libunwind/ {print $3}' | xargs -r cp -L -t "$stage/profiler/"
else
  echo "gpu_bundle: $profiler missing (deploy/setup.sh installs google-perftools): no profiles"
fi

cp -r /usr/share/libonnx-testdata/data/node "$stage/testdata/"
# xz with a 64 MiB window: the statically linked binaries share most of their
# code, which gzip's 32 KiB window cannot see (57 MB gzip, 20 MB xz), and the
# device tool carries at most 64 MiB with the working tree.
rm -f .bundle/graphserve-gpu.tar.gz
tar -C .bundle -cf - graphserve-gpu | xz -9 -T2 >.bundle/graphserve-gpu.tar.xz
du -sh .bundle/graphserve-gpu.tar.xz "$stage/bin" "$stage/lib"
