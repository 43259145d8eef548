#!/usr/bin/env python3
"""Reads a gperftools CPU profile (bench/serve_profile.sh writes them) and
prints where the samples fell: by library, by function on top of the stack
(self), and by function anywhere on the stack (total).

google-pprof 2.10 misplaces symbols in today's shared libraries and
position-independent executables (their code does not start at file offset
0), so this script maps each address itself: through the profile's copy of
/proc/self/maps to a file offset, through the file's program headers to an
address inside the file, and binutils' addr2line names it.

    bench/profile_report.py PROFILE [--root DIR] [--top N] [--callers TEXT [--depth N]]

--root: a folder holding the profiled machine's files at their paths (a
library found there wins over this machine's own copy, which may be another
version); bench/serve_profile.sh packs the system libraries it saw as
system_libs.tar.gz. --callers: also the stacks above each function whose
name holds TEXT, a few frames deep (who takes that lock, who calls that
syscall).
"""

import argparse
import bisect
import collections
import functools
import os
import struct
import subprocess
import sys
from dataclasses import dataclass

WORD = struct.Struct("<Q")


@dataclass
class Mapping:
    start: int
    end: int
    offset: int
    path: str


def read_profile(data):
    """Returns (samples, period_us, mappings): samples is a list of
    (count, [pc, ...]) with the leaf first (the legacy binary format: words of
    8 bytes, a header 0 3 0 period 0, records count n pc*n, a trailer 0 1 0,
    then the text of /proc/self/maps)."""
    header = struct.unpack_from("<5Q", data, 0)
    if header[0] != 0 or header[1] != 3:
        raise ValueError("not a gperftools CPU profile (header %r)" % (header,))
    period_us = header[3]
    offset = 5 * WORD.size
    samples = []
    while True:
        count, depth = struct.unpack_from("<2Q", data, offset)
        offset += 2 * WORD.size
        pcs = list(struct.unpack_from("<%dQ" % depth, data, offset))
        offset += depth * WORD.size
        if count == 0 and depth == 1 and pcs == [0]:
            break
        samples.append((count, pcs))
    return samples, period_us, parse_maps(data[offset:].decode(errors="replace"))


def parse_maps(text):
    mappings = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or "x" not in fields[1]:
            continue  # only code can hold a sampled address
        start, end = (int(x, 16) for x in fields[0].split("-"))
        mappings.append(Mapping(start, end, int(fields[2], 16), fields[5].strip()))
    return sorted(mappings, key=lambda m: m.start)


@functools.lru_cache(maxsize=None)
def load_segments(path):
    """(file offset, size, address) of each executable PT_LOAD segment of an
    ELF file."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return []
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    segments = []
    for i in range(phnum):
        kind, flags, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table,
                                                                   i * phentsize)
        if kind == 1 and flags & 1:  # PT_LOAD, PF_X
            segments.append((offset, filesz, vaddr))
    return segments


class Symbolizer:
    def __init__(self, mappings, root):
        self.mappings = mappings
        self.starts = [m.start for m in mappings]
        self.root = root
        self.names = {}

    def mapping(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0 and pc < self.mappings[i].end:
            return self.mappings[i]
        return None

    def local_path(self, path):
        if self.root:
            candidate = os.path.join(self.root, path.lstrip("/"))
            if os.path.exists(candidate):
                return candidate
        return path if os.path.exists(path) else None

    def name_all(self, pcs):
        """Names every address of `pcs` (one addr2line run per file)."""
        by_file = collections.defaultdict(dict)
        for pc in pcs:
            m = self.mapping(pc)
            if m is None:
                self.names[pc] = "?"
                continue
            library = os.path.basename(m.path) or "[anonymous]"
            local = self.local_path(m.path) if m.path.startswith("/") else None
            if local is None:
                self.names[pc] = "[%s]" % library
                continue
            file_offset = pc - m.start + m.offset
            address = None
            for seg_offset, size, vaddr in load_segments(local):
                if seg_offset <= file_offset < seg_offset + size:
                    address = file_offset - seg_offset + vaddr
                    break
            if address is None:
                self.names[pc] = "[%s]" % library
                continue
            by_file[(local, library)][pc] = address
        for (local, library), addresses in by_file.items():
            pcs_here = list(addresses)
            query = "".join("0x%x\n" % addresses[pc] for pc in pcs_here)
            out = subprocess.run(["addr2line", "-f", "-C", "-e", local],
                                 input=query, capture_output=True, text=True, check=False).stdout
            lines = out.splitlines()
            # Two lines per address: the function, then file:line.
            for i, pc in enumerate(pcs_here):
                function = lines[2 * i] if 2 * i < len(lines) else "??"
                if function == "??":
                    function = "0x%x" % addresses[pc]
                self.names[pc] = "%s  [%s]" % (shorten(function), library)

    def name(self, pc):
        return self.names.get(pc, "?")


def shorten(function):
    """A demangled name without its own argument list, which is long in C++:
    the last parenthesised group, when the name ends with one (a lambda's or
    an operator()'s parentheses earlier in the name stay)."""
    body = function[:-len(" const")] if function.endswith(" const") else function
    if not body.endswith(")"):
        return function
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        if body[i] == ")":
            depth += 1
        elif body[i] == "(":
            depth -= 1
            if depth == 0:
                return body[:i] if i > 0 else function
    return function


def report(samples, period_us, symbolizer, top, callers_of=None, caller_depth=4):
    # The leaf is where the sample fell; callers are return addresses, one
    # byte back so that they name the call's own function.
    all_pcs = {pc for _, pcs in samples for pc in pcs[:1]}
    all_pcs |= {pc - 1 for _, pcs in samples for pc in pcs[1:]}
    symbolizer.name_all(all_pcs)
    total = sum(count for count, _ in samples)
    self_counts = collections.Counter()
    total_counts = collections.Counter()
    libraries = collections.Counter()
    callers = collections.Counter()
    for count, pcs in samples:
        frames = [symbolizer.name(pcs[0])] + [symbolizer.name(pc - 1) for pc in pcs[1:]]
        self_counts[frames[0]] += count
        m = symbolizer.mapping(pcs[0])
        libraries[os.path.basename(m.path) if m and m.path else "?"] += count
        for frame in set(frames):
            total_counts[frame] += count
        if callers_of:
            hit = next((i for i, f in enumerate(frames) if callers_of in f), None)
            if hit is not None:
                callers[" <- ".join(frames[hit:hit + 1 + caller_depth])] += count
    # Samples, not CPU time: the profiler's process-wide timer signals merge
    # when several threads run at once, so a busy process gets far fewer than
    # one per period of the CPU it used (bench/README.md, "Profiles").
    lines = ["%d samples (sampling period %d us of CPU)" % (total, period_us)]

    def table(title, counter, limit):
        lines.append("")
        lines.append(title)
        for name, count in counter.most_common(limit):
            lines.append("%7d %5.1f%%  %s" % (count, 100.0 * count / total, name))

    table("by library (where samples fell)", libraries, 25)
    table("self: function on top of the stack", self_counts, top)
    table("total: function anywhere on the stack", total_counts, top)
    if callers_of:
        table("stacks above %r (innermost first)" % callers_of, callers, top)
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--root", help="the profiled machine's files at their paths")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--callers", help="a function name's part: print the stacks above it")
    parser.add_argument("--depth", type=int, default=4, help="frames above, with --callers")
    args = parser.parse_args(argv)
    with open(args.profile, "rb") as f:
        samples, period_us, mappings = read_profile(f.read())
    print(report(samples, period_us, Symbolizer(mappings, args.root), args.top, args.callers,
                 args.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
