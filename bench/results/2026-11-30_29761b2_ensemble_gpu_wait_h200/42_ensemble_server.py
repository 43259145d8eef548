"""An ensemble (uint8 preprocessing, then ResNet-50) through a graphserve
server, its latency (perf_analyzer over gRPC) and the server's CPU, with
--gpu-wait block against spin (issue 31: "an ensemble's latency and CPU
under --gpu-wait block through a server"). CPU is the server process's
utime + stime over each perf_analyzer run, in cores.

    python3 ensemble_server.py BIN_DIR PERF_ANALYZER WORK OUT
"""
import csv, json, os, subprocess, sys, time
import torch, torchvision
sys.path.insert(0, "bench")
import ensemble_pipeline, model_zoo

bin_dir, perf_analyzer, work, out = sys.argv[1:5]
repo = os.path.join(work, "repo")
for name in ("preprocess", "resnet50", "pipeline"):
    os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
ensemble_pipeline.write_preprocess(os.path.join(repo, "preprocess", "1", "model.onnx"))
torch.manual_seed(0)
cnn = torchvision.models.resnet50(weights=None).eval()
model_zoo.export(model_zoo.wrap(cnn, "image"), "image",
                 os.path.join(repo, "resnet50", "1", "model.onnx"), "ts", torch.float32)
configs = {
    "preprocess": """name: "preprocess"
max_batch_size: 8
input { name: "image" data_type: TYPE_UINT8 dims: [ 224, 224, 3 ] }
output { name: "pixels" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
""",
    "resnet50": """name: "resnet50"
max_batch_size: 8
input { name: "x" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 1000 ] }
""",
    "pipeline": """name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input { name: "IMAGE" data_type: TYPE_UINT8 dims: [ 224, 224, 3 ] }
output { name: "SCORES" data_type: TYPE_FP32 dims: [ 1000 ] }
ensemble_scheduling {
  step { model_name: "preprocess" model_version: -1
         input_map { key: "image" value: "IMAGE" } output_map { key: "pixels" value: "PIXELS" } }
  step { model_name: "resnet50" model_version: -1
         input_map { key: "x" value: "PIXELS" } output_map { key: "y" value: "SCORES" } }
}
""",
}
for name, text in configs.items():
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(text)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


rows = []
for wait in ("block", "spin", "block", "spin"):
    log_path = os.path.join(work, f"server_{wait}_{len(rows)}.log")
    log = open(log_path, "w")
    server = subprocess.Popen([os.path.join(bin_dir, "graphserve"), "--model-repository", repo,
                               "--device", "cuda", "--gpu-wait", wait, "--grpc-port", "8001",
                               "--http-port", "8000", "--metrics-port", "8002"],
                              stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    while time.time() - started < 120:
        if "serving gRPC on" in open(log_path).read() or server.poll() is not None:
            break
        time.sleep(0.2)
    if server.poll() is not None or "serving gRPC on" not in open(log_path).read():
        print(open(log_path).read()[-3000:], flush=True)
        rows.append({"wait": wait, "error": "server did not start"})
        server.kill()
        continue
    for batch in (1, 8):
        for concurrency in (1, 4):
            csv_path = os.path.join(work, f"pa_{wait}_{len(rows)}.csv")
            cpu0, wall0 = cpu_seconds(server.pid), time.time()
            done = subprocess.run([perf_analyzer, "-m", "pipeline", "-u", "127.0.0.1:8001",
                                   "-i", "grpc", "-b", str(batch), "--concurrency-range",
                                   f"{concurrency}:{concurrency}", "--measurement-interval",
                                   "1500", "--stability-percentage", "25", "--max-trials", "6",
                                   "--percentile", "99", "-f", csv_path],
                                  capture_output=True, text=True, timeout=120)
            cpu = (cpu_seconds(server.pid) - cpu0) / (time.time() - wall0)
            row = {"wait": wait, "batch": batch, "concurrency": concurrency,
                   "server_cores": round(cpu, 2), "rc": done.returncode}
            if done.returncode == 0 and os.path.exists(csv_path):
                r = list(csv.DictReader(open(csv_path)))[0]
                row.update(infer_s=float(r["Inferences/Second"]), p50_us=int(r["p50 latency"]),
                           p99_us=int(r["p99 latency"]))
            else:
                row["tail"] = (done.stdout + done.stderr)[-500:]
            print(json.dumps(row), flush=True)
            rows.append(row)
    server.terminate()
    server.wait(timeout=60)
json.dump(rows, open(os.path.join(out, "ensemble_server.json"), "w"), indent=1)
lines = ["| --gpu-wait | batch | concurrency | infer/s | p50 us | p99 us | server cores |",
         "|---|---|---|---|---|---|---|"]
for r in rows:
    if "infer_s" in r:
        lines.append(f"| {r['wait']} | {r['batch']} | {r['concurrency']} | {r['infer_s']:.0f} | "
                     f"{r['p50_us']} | {r['p99_us']} | {r['server_cores']} |")
    else:
        lines.append(f"| {r['wait']} | {r.get('batch', '-')} | {r.get('concurrency', '-')} | "
                     f"failed: {r.get('error', r.get('tail', ''))[:200]} | | | |")
open(os.path.join(out, "ensemble_server.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
