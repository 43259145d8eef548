#pragma once
// Names the calling thread for top -H, perf, gdb and bench/thread_sampler.py,
// which group a process's CPU by thread name: without names every thread of
// the server is "graphserve", and the stream workers' share cannot be told
// from gRPC's queue threads'.

#include <string_view>

namespace graphserve {

// Linux keeps at most 15 characters of a thread's name; longer names are cut.
void NameThisThread(std::string_view name);

}  // namespace graphserve
