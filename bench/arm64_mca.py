#!/usr/bin/env python3
"""arm64_mca.py - predicted speed of the ARM64 kernels' inner loops, from llvm-mca.

Speed on ARM cannot be measured on an x86 machine, so this compiles the kernel files exactly as
the build does (aarch64-linux-gnu-gcc, -O3 and the folder's flags from src/kernels/kernels.cmake),
takes the innermost loops of the GEMM micro-kernels and of the attention tile (the loops with
the most FMA-class instructions: fmla / bfdot / sdot), and runs llvm-mca on each for each CPU
model:

  cycles/iter   llvm-mca's steady-state cycles per loop iteration (Total Cycles / Iterations)
  bottleneck    the resource with the highest pressure per iteration (llvm-mca's resource view)
  peak share    (FMA-class instructions x their reciprocal throughput) / cycles per iteration:
                the fraction of the used instruction's peak the loop reaches if nothing but the
                core's pipes limits it (L1 hits assumed; no cache misses, no frequency effects)

usage: bench/arm64_mca.py [--mca llvm-mca-19] [--cc aarch64-linux-gnu-gcc] [--markdown]
       make bench-arm64-mca   (writes the table to stdout; bench/arm64_mca_results.md holds a run)
Needs Debian's gcc-aarch64-linux-gnu and llvm-19 (scripts/install-deps.sh --bench).
Note: LLVM's apple-m1 model is its Cyclone model (3 vector pipes; the real M1 core has 4), so the
M1 column is a conservative reading of the same loop.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPUS = ["neoverse-v1", "neoverse-v2", "apple-m1"]
# the folder flags of src/kernels/kernels.cmake; KERNELS: (title, file, function whose loops to
# read, loops to report, needs BF16 or I8MM: not on Apple M1)
FLAGS = {"arm64_neon": ["-march=armv8-a"], "arm64_bf16": ["-march=armv8.2-a+bf16"],
         "arm64_dotprod": ["-march=armv8.2-a+dotprod"], "arm64_i8mm": ["-march=armv8.6-a+i8mm"]}
COMMON = ["-O3", "-DNDEBUG", "-ffp-contract=off", "-fno-schedule-insns", "-fPIC",
          "-DG4V_BUILDING_LIBRARY=1", "-DG4V_ARM64_KERNELS=1"]
KERNELS = [
    ("neon-f32 GEMM (8x12)", "arm64_neon/gemm_neon.c", "ukr_f32", 1, False),
    ("neon-bf16w GEMM (8x12)", "arm64_neon/gemm_neon.c", "ukr_bf16w", 1, False),
    ("neon-bf16dp GEMM (8x12, BFDOT)", "arm64_bf16/gemm_bf16.c", "ukr", 1, True),
    ("neon-dotprod-q8 GEMM (8x12, SDOT)", "arm64_dotprod/gemm_q8_dotprod.c", "ukr", 1, False),
    ("neon-i8mm-q8 GEMM (8x8, SMMLA)", "arm64_i8mm/gemm_q8_i8mm.c", "ukr", 1, True),
    # attention: its two product loops (logits, P.V), inlined into the task function
    ("neon attention (24 queries)", "arm64_neon/attention_neon.c", "attn_task", 2, False),
]
FMA_RE = re.compile(r"^\s*(fmla|bfdot|bfmmla|sdot|smmla)\b")


def compile_asm(cc, rel):
    folder = rel.split("/")[0]
    out = tempfile.NamedTemporaryFile(suffix=".s", delete=False).name
    cmd = [cc, *COMMON, *FLAGS[folder], "-I", os.path.join(SRC, "src"), "-I",
           os.path.join(SRC, "include"), "-S", "-o", out, os.path.join(SRC, "src", "kernels", rel)]
    subprocess.run(cmd, check=True)
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    return text


def function_body(asm, name):
    """The instruction and label lines of function `name` (GCC's .s layout)."""
    lines, inside = [], False
    for line in asm.splitlines():
        if re.match(rf"^{re.escape(name)}:", line):
            inside = True
            continue
        if inside:
            if re.match(rf"^\s*\.size\s+{re.escape(name)},", line):
                break
            lines.append(line)
    if not lines:
        sys.exit(f"arm64_mca: function {name} not found in the assembly")
    return lines


def innermost_loops(body):
    """(label, instructions) of each loop label .. backward branch with no label inside."""
    loops = []
    labels = {}
    for i, line in enumerate(body):
        m = re.match(r"^(\.L\w+):", line)
        if m:
            labels[m.group(1)] = i
        b = re.match(r"^\s*(b\.?[a-z]*|cbn?z|tbn?z)\s+.*?(\.L\w+)\s*$", line)
        if b and b.group(2) in labels:
            start = labels[b.group(2)]
            inner = body[start + 1:i + 1]
            if any(re.match(r"^\.L\w+:", x) for x in inner):
                continue
            insns = [x for x in inner if x.strip() and not x.strip().startswith((".", "//", "@"))]
            loops.append((b.group(2), insns))
    return loops


def mca(tool, cpu, insns):
    src = "\n".join(insns) + "\n"
    r = subprocess.run([tool, "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+bf16,+dotprod,+i8mm",
                        "-iterations=200", "-instruction-info", "-resource-pressure"],
                       input=src, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"arm64_mca: llvm-mca failed for {cpu}:\n{r.stderr}")
    out = r.stdout
    iters = int(re.search(r"Iterations:\s+(\d+)", out).group(1))
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    # instruction info rows: uops latency rthroughput [flags] instruction
    rthr = None  # the best reciprocal throughput among the loop's FMA-class forms: the peak
    for line in out.split("Instruction Info:")[1].splitlines():
        m = re.match(r"^\s*\d+\s+\d+\s+([\d.]+)\s+.*?\s(fmla|bfdot|bfmmla|sdot|smmla)\s", line)
        if m:
            rthr = min(rthr or 1e9, float(m.group(1)))
    # resource pressure per iteration: header names [0.0] ... then one row of numbers
    sect = out.split("Resource pressure per iteration:")[1].splitlines()
    names = {}
    resources = out.split("Resources:")[1].split("Resource pressure per iteration:")[0]
    for line in resources.splitlines():
        m = re.match(r"^\[([\d.]+)\]\s+-\s+(\S+)", line)
        if m:
            names[m.group(1)] = m.group(2)
    hdr = re.findall(r"\[([\d.]+)\]", sect[1])
    vals = sect[2].split()
    pressure = {}
    for k, v in zip(hdr, vals):
        if v != "-":
            n = names.get(k, k)
            pressure[n] = pressure.get(n, 0.0) + float(v)
    # per unit kind: pressure summed over the units of that name, divided by their count
    count = {}
    for k, n in names.items():
        count[n] = count.get(n, 0) + 1
    per_unit = {n: p / count.get(n, 1) for n, p in pressure.items()}
    bott = max(per_unit, key=per_unit.get) if per_unit else "-"
    return cycles / iters, rthr, bott, per_unit.get(bott, 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mca", default="llvm-mca-19", help="llvm-mca binary (LLVM >= 17: V1/V2)")
    ap.add_argument("--cc", default="aarch64-linux-gnu-gcc", help="the aarch64 C compiler")
    ap.add_argument("--markdown", action="store_true", help="markdown table (default: same)")
    a = ap.parse_args()
    ver = subprocess.run([a.mca, "--version"], capture_output=True, text=True).stdout
    ccv = subprocess.run([a.cc, "--version"], capture_output=True, text=True).stdout
    print(f"<!-- {ccv.splitlines()[0]}; {' '.join(ver.split()[:6])} -->")
    print("| kernel loop | CPU | FMA-class insns/iter | cycles/iter | ideal cycles | peak share "
          "| bottleneck (pressure/unit/iter) |")
    print("|---|---|---|---|---|---|---|")
    worst = {}
    for title, rel, fn, nloops, bf16 in KERNELS:
        asm = compile_asm(a.cc, rel)
        loops = innermost_loops(function_body(asm, fn))
        # the FMA-densest loops with a full register block (>= 12 FMAs): the product loops, not
        # the softmax's exp polynomial (which also uses fmla)
        loops = [l for l in loops if sum(1 for x in l[1] if FMA_RE.match(x)) >= 12]
        loops.sort(key=lambda l: -sum(1 for x in l[1] if FMA_RE.match(x)) / len(l[1]))
        for li, (label, insns) in enumerate(loops[:nloops]):
            nf = sum(1 for x in insns if FMA_RE.match(x))
            spills = sum(1 for x in insns if "[sp" in x)
            name = title + (f", loop {li + 1} ({len(insns)} insns)" if nloops > 1 else
                            f" ({len(insns)} insns)")
            if spills:
                name += f", {spills} stack refs"
            for cpu in CPUS:
                if bf16 and cpu == "apple-m1":
                    print(f"| {name} | {cpu} | {nf} | - | - | n/a (M1 has no BF16 or I8MM) | - |")
                    continue
                cyc, rthr, bott, bp = mca(a.mca, cpu, insns)
                ideal = nf * (rthr or 0)
                share = ideal / cyc if cyc else 0
                worst[cpu] = min(worst.get(cpu, 9), share)
                print(f"| {name} | {cpu} | {nf} | {cyc:.2f} | {ideal:.2f} | {100 * share:.0f}% "
                      f"| {bott} ({bp:.2f}) |")
    print()
    print("lowest peak share per CPU: " +
          ", ".join(f"{c} {100 * w:.0f}%" for c, w in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
