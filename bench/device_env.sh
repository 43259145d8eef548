# Sourced by a device call script (bench/results/*/NN_call.sh) after it sets
# B to the bundle (bench/gpu_bundle.sh's tarball): unpacks it as
# gpu_check.sh does, unless gpu_check.sh already did, and sets `bin`,
# LD_LIBRARY_PATH (the bundle's libraries, CUDA's, and the cuDNN and NVRTC of
# the machine's PyTorch) and `el`, which says how long the script has run.
start=$(date +%s)
el() { echo "after $(( $(date +%s) - start )) s"; }
if [[ ! -x /tmp/graphserve-gpu/bin/graphserve-capture ]]; then
  rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf "$B"
fi
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
