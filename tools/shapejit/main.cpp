// The shapejit command:
//   shapejit run --graph G.json --in a.npy [--in b.npy ...] --out-dir D [--config C.json]
//   shapejit replay TRACE --config C.json [--config C2.json ...] [--json] [--plot out.svg] [--exec none|all] [--log]
//   shapejit config check C.json
//   shapejit cache stats|ls|verify|clear [--config C.json]
//   shapejit cpu [--json]
// Exit status: 0 on success, 1 on an error (printed with its place), 2 on
// bad usage.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/graph_json.h"
#include "cache/signer.h"
#include "jit/runtime/jit.h"
#include "tools/shapejit/cache_cmd.h"
#include "tools/shapejit/npy.h"
#include "tools/shapejit/plot.h"
#include "tools/shapejit/replay.h"

namespace fs = std::filesystem;
using namespace shapejit;

namespace {

const char kUsage[] =
    "usage:\n"
    "  shapejit run --graph G.json --in a.npy [--in b.npy ...] --out-dir D [--config C.json]\n"
    "  shapejit replay TRACE --config C.json [--config C2.json ...] [--json] [--plot out.svg] [--exec none|all] [--log]\n"
    "                  [--no-progress]\n"
    "  shapejit config check C.json\n"
    "  shapejit cache stats|ls|verify|clear [--config C.json]\n"
    "  shapejit cpu [--json]\n";

int usage(const std::string& why) {
  std::fprintf(stderr, "shapejit: %s\n%s", why.c_str(), kUsage);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "shapejit: %s\n", s.to_string().c_str());
  return 1;
}

Expected<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kIo, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<policy::Config> load_config(const std::string& path) {
  std::string text = SJ_TRY(slurp(path));
  auto c = policy::parse_config(text);
  if (!c.is_ok()) return c.status().with_context(path);
  return c;
}

int cmd_run(const std::vector<std::string>& a) {
  std::string graph_path, out_dir, config_path;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool has_value = i + 1 < a.size();
    if (a[i] == "--graph" && has_value) graph_path = a[++i];
    else if (a[i] == "--in" && has_value) inputs.push_back(a[++i]);
    else if (a[i] == "--out-dir" && has_value) out_dir = a[++i];
    else if (a[i] == "--config" && has_value) config_path = a[++i];
    else return usage("run: unexpected argument '" + a[i] + "'");
  }
  if (graph_path.empty() || out_dir.empty()) return usage("run needs --graph and --out-dir");
  auto text = slurp(graph_path);
  if (!text.is_ok()) return fail(text.status());
  auto graph = ir::parse_graph(*text);
  if (!graph.is_ok()) return fail(graph.status().with_context(graph_path));
  if (inputs.size() != graph->inputs.size()) {
    return fail(invalid(graph_path + ": the graph has " + std::to_string(graph->inputs.size()) + " inputs, " + std::to_string(inputs.size()) + " --in files given"));
  }
  policy::Config config;
  if (!config_path.empty()) {
    auto c = load_config(config_path);
    if (!c.is_ok()) return fail(c.status());
    config = *c;
  }
  std::vector<ir::Tensor> tensors;
  std::vector<DLTensor> dl;
  std::vector<const DLTensor*> args;
  for (const std::string& path : inputs) {
    auto t = tools::read_npy(path);
    if (!t.is_ok()) return fail(t.status());
    tensors.push_back(std::move(t).value());
  }
  for (const ir::Tensor& t : tensors) dl.push_back(t.dl());
  for (const DLTensor& d : dl) args.push_back(&d);
  auto jit = runtime::Jit::create(config);
  if (!jit.is_ok()) return fail(jit.status());
  std::vector<ir::Tensor> outputs;
  Status s = (*jit)->call_graph("run", *graph, {}, runtime::Args(args.data(), args.size()), outputs);
  if (!s.is_ok()) return fail(s);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return fail(Status(Code::kIo, out_dir + ": " + ec.message()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = (fs::path(out_dir) / (graph->value_names[graph->outputs[i]] + ".npy")).string();
    Status w = tools::write_npy(path, outputs[i]);
    if (!w.is_ok()) return fail(w);
    std::printf("%s\n", path.c_str());
  }
  return 0;
}

int cmd_replay(const std::vector<std::string>& a) {
  std::string trace_path, plot_path;
  std::vector<std::string> configs;
  bool json = false, progress = true;
  tools::ReplayOptions options;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool has_value = i + 1 < a.size();
    if (a[i] == "--config" && has_value) configs.push_back(a[++i]);
    else if (a[i] == "--plot" && has_value) plot_path = a[++i];
    else if (a[i] == "--json") json = true;
    else if (a[i] == "--log") options.log_recompiles = true;
    else if (a[i] == "--no-progress") progress = false;
    else if (a[i] == "--exec" && has_value) {
      const std::string& v = a[++i];
      if (v != "none" && v != "all") return usage("--exec takes none or all");
      options.execute = v == "all";
    } else if (a[i].rfind("--", 0) != 0 && trace_path.empty()) trace_path = a[i];
    else return usage("replay: unexpected argument '" + a[i] + "'");
  }
  if (trace_path.empty() || configs.empty()) return usage("replay needs a trace and at least one --config");
  options.progress = progress && isatty(STDERR_FILENO) != 0;
  std::vector<tools::NamedConfig> named;
  for (const std::string& path : configs) {
    auto config = load_config(path);
    if (!config.is_ok()) return fail(config.status());
    named.push_back({fs::path(path).stem().string(), std::move(config).value()});
  }
  auto reader = trace::TraceReader::open(trace_path);
  if (!reader.is_ok()) return fail(reader.status());
  auto results = tools::replay(**reader, named, options);
  if (!results.is_ok()) return fail(results.status());
  if (json) {
    for (const auto& r : *results) std::printf("%s\n", r.stats.dump().c_str());
  } else {
    std::printf("%s", tools::format_table(*results).c_str());
  }
  if (!plot_path.empty()) {
    std::vector<tools::PlotSeries> series;
    for (const auto& r : *results) series.push_back({r.config_name, r.cumulative_ms});
    std::ofstream out(plot_path, std::ios::binary);
    out << tools::cumulative_time_svg(series, fs::path(trace_path).filename().string() + ": cumulative total time per config");
    if (!out) return fail(Status(Code::kIo, plot_path + ": cannot write the plot"));
  }
  return 0;
}

int cmd_config(const std::vector<std::string>& a) {
  if (a.size() != 2 || a[0] != "check") return usage("config takes: check C.json");
  auto c = load_config(a[1]);
  if (!c.is_ok()) return fail(c.status());
  // The keys are read as a Jit would read them: a key the service cannot
  // read fails here, not at its first call.
  auto signer = cache::Signer::load(c->cache.sign_key_files);
  if (!signer.is_ok()) return fail(signer.status());
  std::printf("%s: ok\n%s\n", a[1].c_str(), policy::config_to_json(*c).dump(2).c_str());
  if (signer->enabled()) {
    std::printf("cache records are signed and checked with %zu key%s\n", signer->key_count(), signer->key_count() == 1 ? "" : "s");
  } else if (!c->cache.redis.empty()) {
    std::fprintf(stderr,
                 "warning: /cache/remote/redis: the cache tiers are unsigned: whoever can write to %s (or to the disk folder) runs code in "
                 "every process that uses them; set /cache/sign/key_file (or $%s) to sign them\n",
                 c->cache.redis.c_str(), cache::Signer::kKeysVariable);
  }
  return 0;
}

int cmd_cache(const std::vector<std::string>& a) {
  if (a.empty()) return usage("cache takes: stats|ls|verify|clear [--config C.json]");
  policy::Config config;
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i] != "--config" || i + 1 == a.size()) return usage("cache: unexpected argument '" + a[i] + "'");
    auto c = load_config(a[++i]);
    if (!c.is_ok()) return fail(c.status());
    config = *c;
  }
  return tools::cache_command(a[0], config);
}

// The CPU device's choice of GEMM tiles (SHAPEJIT_CPU_TILES forces one)
// and what the probe measured.
int cmd_cpu(const std::vector<std::string>& a) {
  const bool json = a.size() == 1 && a[0] == "--json";
  if (!a.empty() && !json) return usage("cpu: unexpected argument '" + a[0] + "'");
  const nlohmann::json c = runtime::cpu_json();
  if (json) {
    std::printf("%s\n", c.dump(2).c_str());
    return 0;
  }
  std::printf("GEMM tiles: %s (%s)\n", c["tiles"].get<std::string>().c_str(), c["why"].get<std::string>().c_str());
  std::printf("one thread, G multiply-adds a second: 256-bit FMAs %.1f, 512-bit %.1f; AVX2's tiles %.1f, AVX-512's %.1f (probe %.1f ms)\n",
              c["fma256_g"].get<double>(), c["fma512_g"].get<double>(), c["tile256_g"].get<double>(), c["tile512_g"].get<double>(),
              c["probe_ms"].get<double>());
  return 0;
}

}  // namespace

int dispatch_command(int argc, char** argv) {
  if (argc < 2) return usage("no command");
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "run") return cmd_run(rest);
  if (cmd == "replay") return cmd_replay(rest);
  if (cmd == "config") return cmd_config(rest);
  if (cmd == "cache") return cmd_cache(rest);
  if (cmd == "cpu") return cmd_cpu(rest);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::printf("%s", kUsage);
    return 0;
  }
  return usage("unknown command '" + cmd + "'");
}

int main(int argc, char** argv) {
  try {
    return dispatch_command(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shapejit: out of memory (a tensor too large to allocate)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shapejit: internal error: %s\n", e.what());
  }
  return 1;
}
