// A main() for fuzz targets built without libFuzzer (gcc, or clang without
// --config=fuzz): runs LLVMFuzzerTestOneInput once on every file named on the
// command line, or found (recursively) in a directory named there, so that the
// committed seed corpora and every crash ever fixed stay regression tests in
// the plain `bazel test //...`. The target aborts on a broken invariant;
// this driver fails when it found no input at all (an empty or misnamed
// corpus would otherwise pass silently).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

void CollectInputs(const fs::path& path, std::vector<fs::path>& inputs) {
  if (fs::is_directory(path)) {
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
  } else if (fs::is_regular_file(path)) {
    inputs.push_back(path);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) CollectInputs(argv[i], inputs);
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs: name corpus files or directories\n");
    return 1;
  }
  for (const fs::path& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "running %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "ran %zu inputs\n", inputs.size());
  return 0;
}
