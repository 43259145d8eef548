#!/usr/bin/env python3
"""Tests of bench/profile_report.py on a profile written here in gperftools'
format, against a small program built for the test (its code at a file
offset other than 0, as in today's executables and libraries):

  python3 bench/profile_report_test.py
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_report  # noqa: E402  (beside this file)

PROGRAM = """
__attribute__((noinline)) int leaf_function(int x) { return x * 3 + 1; }
__attribute__((noinline)) int caller_function(int x) { return leaf_function(x) + 2; }
int main(int argc, char** argv) { return caller_function(argc); }
"""
# Where the loader put the program in memory: a position-independent
# executable anywhere; the other at the addresses it was linked for.
PIE_LOAD_BASE = 0x555500000000


def words(*values):
    return struct.pack("<%dQ" % len(values), *values)


class ProfileReportTest(unittest.TestCase):
    # A position-independent executable with its code in a segment of its own
    # (-z separate-code): the segment's file offset is not 0, but equal to its
    # address in the file.
    LINK_FLAGS = ["-fPIE", "-pie", "-Wl,-z,separate-code"]
    LOAD_BASE = PIE_LOAD_BASE

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        source = os.path.join(self.dir, "program.c")
        with open(source, "w") as f:
            f.write(PROGRAM)
        self.binary = os.path.join(self.dir, "program")
        subprocess.run(["gcc", "-O1"] + self.LINK_FLAGS + [source, "-o", self.binary],
                       check=True)
        symbols = subprocess.run(["nm", self.binary], capture_output=True, text=True,
                                 check=True).stdout
        self.address = {line.split()[2]: int(line.split()[0], 16)
                        for line in symbols.splitlines() if len(line.split()) == 3}
        # The executable segment, mapped at LOAD_BASE + its address, as the
        # loader maps it.
        leaf = self.address["leaf_function"]
        offset, size, vaddr = next(s for s in profile_report.load_segments(self.binary)
                                   if s[2] <= leaf < s[2] + s[1])
        self.code = (offset, size, vaddr)
        start = self.LOAD_BASE + vaddr
        self.maps = ("%x-%x r-xp %08x 00:00 1    %s\n"
                     "%x-%x r-xp 00000000 00:00 2    /nonexistent/libgone.so\n"
                     % (start, start + size, offset, self.binary, 0x7f0000000000, 0x7f0000001000))

    def pc(self, name, into=4):
        return self.LOAD_BASE + self.address[name] + into

    def write_profile(self, records):
        data = words(0, 3, 0, 1000, 0)
        for count, pcs in records:
            data += words(count, len(pcs), *pcs)
        data += words(0, 1, 0) + self.maps.encode()
        path = os.path.join(self.dir, "test.prof")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_reads_samples_and_maps(self):
        path = self.write_profile([(3, [self.pc("leaf_function")]), (2, [0x7f0000000010])])
        with open(path, "rb") as f:
            samples, period_us, mappings = profile_report.read_profile(f.read())
        self.assertEqual(period_us, 1000)
        self.assertEqual([count for count, _ in samples], [3, 2])
        self.assertEqual([m.path for m in mappings], [self.binary, "/nonexistent/libgone.so"])

    def test_names_functions_in_code_past_file_offset_zero(self):
        self.assertNotEqual(self.code[0], 0, "the test program's code starts at offset 0")
        self.check_names_functions()

    def check_names_functions(self):
        # Leaf samples in leaf_function called from caller_function; a
        # return address points just past the call, inside the caller.
        path = self.write_profile([
            (5, [self.pc("leaf_function"), self.pc("caller_function", into=8)]),
            (2, [self.pc("caller_function")]),
            (1, [0x7f0000000010, self.pc("caller_function", into=8)]),
        ])
        with open(path, "rb") as f:
            samples, period_us, mappings = profile_report.read_profile(f.read())
        text = profile_report.report(samples, period_us,
                                     profile_report.Symbolizer(mappings, None), top=10,
                                     callers_of="leaf_function", caller_depth=1)
        self.assertIn("8 samples (sampling period 1000 us of CPU)", text)
        self_section = text.split("self:")[1].split("total:")[0]
        self.assertIn("      5  62.5%  leaf_function  [program]", self_section)
        self.assertIn("      2  25.0%  caller_function  [program]", self_section)
        # A library that is not on this machine is named, not guessed at.
        self.assertIn("      1  12.5%  [libgone.so]", self_section)
        total_section = text.split("total:")[1].split("stacks above")[0]
        self.assertIn("      8 100.0%  caller_function  [program]", total_section)
        self.assertIn("leaf_function  [program] <- caller_function  [program]",
                      text.split("stacks above")[1])

    def test_root_wins_over_this_machine(self):
        root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(root, self.dir.lstrip("/")))
        # An empty file at the profiled path under root: not an ELF file, so
        # nothing is named from it, and this machine's copy is not used.
        open(os.path.join(root, self.binary.lstrip("/")), "w").close()
        path = self.write_profile([(1, [self.pc("leaf_function")])])
        with open(path, "rb") as f:
            samples, period_us, mappings = profile_report.read_profile(f.read())
        text = profile_report.report(samples, period_us,
                                     profile_report.Symbolizer(mappings, root), top=10)
        self.assertIn("      1 100.0%  [program]", text)

    def test_refuses_other_files(self):
        with self.assertRaises(ValueError):
            profile_report.read_profile(words(1, 2, 3, 4, 5))


class FixedAddressProgramTest(ProfileReportTest):
    """A program linked at a fixed address whose code segment's address is not
    its file offset: a sampled address must go through the segment's address
    to be named (a file offset alone names nothing here)."""
    LINK_FLAGS = ["-no-pie", "-Wl,-Ttext-segment=0x500000"]
    LOAD_BASE = 0

    def test_names_functions_in_code_past_file_offset_zero(self):
        offset, _, vaddr = self.code
        self.assertNotEqual(offset, vaddr, "the test program's code address is its file offset")
        self.check_names_functions()


if __name__ == "__main__":
    unittest.main()
