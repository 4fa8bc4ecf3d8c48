// `disagmoe route-stats`: forward passes per data condition, routing metrics out (RouteStats.h).
#include "compiler/observatory/RouteStats.h"

#include "compiler/observatory/metrics/RoutingMetrics.h"
#include "runtime/executor/Executor.h"
#include "runtime/plan/Plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

// OpenBLAS (linked by the runtime): the executor's ranks already run in parallel threads.
extern "C" void openblas_set_num_threads(int);

namespace disagmoe::observatory {
namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct MeanSd {
  double mean = 0, sd = 0;
};

MeanSd meanSd(const std::vector<double> &v) {
  MeanSd r;
  if (v.empty())
    return r;
  for (double x : v)
    r.mean += x;
  r.mean /= static_cast<double>(v.size());
  for (double x : v)
    r.sd += (x - r.mean) * (x - r.mean);
  r.sd = v.size() > 1 ? std::sqrt(r.sd / static_cast<double>(v.size() - 1)) : 0;
  return r;
}

// Per-sequence expert counts of one condition: counts[layer][sequence * experts + e].
struct Routing {
  int64_t sequences = 0;
  std::vector<std::vector<int32_t>> counts;
};

// `jobs` threads each take the next chunk of runBatch sequences and run it through the executor
// (Executor::run is const and builds its own comm world per call, so runs may overlap); every chunk
// writes its own rows of the counts, so no lock is needed.
Routing forward(const Executor &exec, const ModelSpec &model, const std::vector<int64_t> &tokens,
                int64_t seqLen, int64_t runBatch, int jobs) {
  Routing r;
  r.sequences = static_cast<int64_t>(tokens.size()) / seqLen;
  const int64_t E = model.numExperts, k = model.topK;
  r.counts.assign(model.numLayers, std::vector<int32_t>(r.sequences * E, 0));
  const int64_t chunks = (r.sequences + runBatch - 1) / runBatch;
  std::atomic<int64_t> next{0};
  std::mutex failureMutex;
  std::exception_ptr failure;
  const auto work = [&] {
    for (int64_t c = next++; c < chunks; c = next++) {
      try {
        const int64_t start = c * runBatch, b = std::min(runBatch, r.sequences - start);
        const std::vector<int64_t> ids(tokens.begin() + start * seqLen,
                                       tokens.begin() + (start + b) * seqLen);
        const RunResult run = exec.run(ids, b, seqLen);
        for (int64_t l = 0; l < model.numLayers; ++l) {
          const std::vector<int64_t> &top = run.routing[l];
          int32_t *counts = r.counts[l].data() + start * E;
          for (int64_t t = 0; t < b * seqLen; ++t)
            for (int64_t j = 0; j < k; ++j)
              ++counts[(t / seqLen) * E + top[t * k + j]];
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure)
          failure = std::current_exception();
        next = chunks;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::max(jobs, 1); ++j)
    threads.emplace_back(work);
  work();
  for (auto &t : threads)
    t.join();
  if (failure)
    std::rethrow_exception(failure);
  return r;
}

std::vector<double> rankLoads(const std::vector<int64_t> &expertLoads, int ep) {
  std::vector<double> loads(ep, 0.0);
  const int64_t E = static_cast<int64_t>(expertLoads.size());
  for (int64_t e = 0; e < E; ++e)
    loads[expertRank(e, E, ep)] += static_cast<double>(expertLoads[e]);
  return loads;
}

std::vector<double> toDouble(const std::vector<int64_t> &v) {
  return std::vector<double>(v.begin(), v.end());
}

std::string fmt(double v, const char *f = "%.4f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void writeFile(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      throw std::runtime_error(path + ": cannot write");
    out << text;
    if (!out)
      throw std::runtime_error(path + ": cannot write");
  }
  std::filesystem::rename(tmp, path);
}

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error run(const RouteStatsOptions &o, RouteStatsSummary &summary, std::ostream &log) {
  const auto t0 = Clock::now();
  if (o.data.empty())
    return fail("no --data condition given");
  if (o.seqLen < 1 || o.runBatch < 1 || o.tokens < 1)
    return fail("--seq-len, --run-batch and --tokens must be >= 1");
  for (int64_t g : o.gbs)
    if (g < 1)
      return fail("--gbs " + std::to_string(g) + ": a global batch holds at least one sequence");
  if (o.gbs.empty() || o.ep.empty())
    return fail("--ep and --gbs need at least one value");

  const Plan plan = loadPlan(o.planDir);
  const ModelSpec &model = plan.model;
  const int64_t E = model.numExperts, k = model.topK, L = model.numLayers;
  std::vector<int> epList(o.ep);
  if (o.epDefault)
    epList.erase(std::remove_if(epList.begin(), epList.end(), [&](int d) { return d > E; }),
                 epList.end());
  if (std::string bad = checkEpDegrees(epList, E); !bad.empty())
    return fail(o.modelPath + ": " + bad);

  std::vector<int> eps(epList);
  const int classifyEp = std::min<int>(std::max(o.classifyEp, 1), static_cast<int>(E));
  eps.push_back(classifyEp);
  std::sort(eps.begin(), eps.end());
  eps.erase(std::unique(eps.begin(), eps.end()), eps.end());
  std::vector<int64_t> gbsList(o.gbs);
  const int64_t classifyGbs =
      o.classifyGbs > 0 ? o.classifyGbs : *std::min_element(o.gbs.begin(), o.gbs.end());
  gbsList.push_back(classifyGbs);
  std::sort(gbsList.begin(), gbsList.end());
  gbsList.erase(std::unique(gbsList.begin(), gbsList.end()), gbsList.end());

  summary = RouteStatsSummary{};
  summary.experts = E;
  summary.topK = k;
  summary.layers = L;
  summary.classifyEp = classifyEp;
  summary.classifyGbs = classifyGbs;

  // One BLAS thread per rank: the ranks are the parallelism, and extra BLAS threads only spin.
  openblas_set_num_threads(1);
  ExecutorOptions execOptions;
  execOptions.recordRouting = true;
  const Executor exec(plan, execOptions);

  ojson doc;
  doc["format"] = "disagmoe-route-stats";
  doc["version"] = 1;
  doc["model"] = o.modelPath;
  doc["experts"] = E;
  doc["top_k"] = k;
  doc["layers"] = L;
  doc["vocab"] = model.vocabSize;
  doc["seq_len"] = o.seqLen;
  doc["run_batch"] = o.runBatch;
  doc["jobs"] = o.jobs;
  doc["seed"] = o.seed;
  doc["ep"] = epList;
  doc["gbs"] = o.gbs;
  doc["conditions"] = ojson::array();
  std::string csv = "model,condition,kind,layer,gbs,ep,batches,gini_mean,gini_sd,max_over_mean_"
                    "mean,max_over_mean_sd,"
                    "alpha,alpha_bound\n";

  std::string profileCondition = o.profileData;
  if (profileCondition.empty())
    for (const DataSpec &d : o.data)
      if (d.kind == DataKind::Text) {
        profileCondition = d.name;
        break;
      }
  if (profileCondition.empty())
    profileCondition = o.data.front().name;
  bool profileWritten = false;

  // Everything that can refuse the run is checked before the first condition's progress line
  // (issue 17): the --profile-data name, and every condition's stream (its file, its length).
  if (std::none_of(o.data.begin(), o.data.end(),
                   [&](const DataSpec &d) { return d.name == profileCondition; }))
    return fail("--profile-data " + profileCondition + ": no such --data condition");
  std::vector<std::vector<int64_t>> streams;
  for (const DataSpec &spec : o.data) {
    llvm::Expected<std::vector<int64_t>> stream =
        buildStream(spec, model.vocabSize, o.tokens, o.seed);
    if (!stream)
      return stream.takeError();
    if (static_cast<int64_t>(stream->size()) < o.seqLen)
      return fail(spec.name + ": " + std::to_string(stream->size()) +
                  " tokens, fewer than one sequence of " + std::to_string(o.seqLen));
    streams.push_back(std::move(*stream));
  }

  for (size_t condition = 0; condition < o.data.size(); ++condition) {
    const DataSpec &spec = o.data[condition];
    const std::vector<int64_t> tokens = std::move(streams[condition]);
    const auto f0 = Clock::now();
    const Routing routing = forward(exec, model, tokens, o.seqLen, o.runBatch, o.jobs);
    const double fsec = seconds(f0, Clock::now());
    const int64_t used = routing.sequences * o.seqLen;
    summary.forwardSeconds += fsec;
    summary.forwardTokens += used;
    log << "route-stats: " << spec.name << ": " << used << " tokens (" << routing.sequences
        << " sequences of " << o.seqLen << ") in " << fmt(fsec, "%.2f") << " s, "
        << fmt(used / std::max(fsec, 1e-9), "%.0f") << " tokens/s\n"
        << std::flush;

    ConditionSummary cs;
    cs.name = spec.name;
    cs.kind = spec.kind;
    cs.tokens = used;
    ojson cj;
    cj["name"] = spec.name;
    cj["kind"] = toString(spec.kind);
    cj["file"] = spec.file;
    cj["tokens"] = used;
    cj["sequences"] = routing.sequences;
    cj["forward_seconds"] = fsec;
    // Unigram counts of the tokens that were run (the first `used` of the stream), as [id, count]
    // pairs of the ids that occur: what shuffled:FILE must share with text:FILE.
    {
      std::vector<int64_t> unigrams(static_cast<size_t>(model.vocabSize), 0);
      for (int64_t i = 0; i < used; ++i)
        ++unigrams[static_cast<size_t>(tokens[i])];
      ojson uj = ojson::array();
      for (size_t id = 0; id < unigrams.size(); ++id)
        if (unigrams[id])
          uj.push_back({static_cast<int64_t>(id), unigrams[id]});
      cj["token_counts"] = uj;
    }
    cj["layers"] = ojson::array();
    ojson profileLayers = ojson::array();

    for (int64_t l = 0; l < L; ++l) {
      const std::vector<int32_t> &counts = routing.counts[l];
      std::vector<int64_t> loads(E, 0);
      for (int64_t s = 0; s < routing.sequences; ++s)
        for (int64_t e = 0; e < E; ++e)
          loads[e] += counts[s * E + e];
      ojson lj;
      lj["layer"] = l;
      lj["expert_loads"] = loads;
      lj["max_over_mean"] = maxOverMean(toDouble(loads));
      lj["gini_experts"] = gini(toDouble(loads));
      // The whole stream's send-count matrix per EP degree: sequence s on rank s mod ep.
      ojson sj;
      for (int ep : epList) {
        SendMatrix m(ep);
        for (int64_t s = 0; s < routing.sequences; ++s)
          for (int64_t e = 0; e < E; ++e)
            m.counts[static_cast<size_t>(sourceRank(s, ep)) * ep + expertRank(e, E, ep)] +=
                counts[s * E + e];
        ojson rows = ojson::array();
        for (int src = 0; src < ep; ++src)
          rows.push_back(
              std::vector<int64_t>(m.counts.begin() + src * ep, m.counts.begin() + (src + 1) * ep));
        sj[std::to_string(ep)] = rows;
      }
      lj["send_matrix"] = sj;
      profileLayers.push_back({{"layer", l}, {"expert_loads", loads}});

      double giniAtClass = -1, mmAtClass = -1, alphaAtClass = -1;
      ojson byGbs = ojson::array();
      for (int64_t g : gbsList) {
        const bool listed = std::find(o.gbs.begin(), o.gbs.end(), g) != o.gbs.end();
        const int64_t batches = routing.sequences / g;
        std::vector<std::vector<int64_t>> batchCounts(batches, std::vector<int64_t>(E, 0));
        for (int64_t b = 0; b < batches; ++b)
          for (int64_t s = b * g; s < (b + 1) * g; ++s)
            for (int64_t e = 0; e < E; ++e)
              batchCounts[b][e] += counts[s * E + e];
        std::vector<double> mm;
        for (const auto &c : batchCounts)
          mm.push_back(maxOverMean(toDouble(c)));
        const MeanSd mmStat = meanSd(mm);
        const AlphaFit fit = fitSymmetricDirichletAlpha(batchCounts);
        const std::string bound = fit.atUpperBound ? "upper" : fit.atLowerBound ? "lower" : "none";
        ojson gj;
        gj["gbs"] = g;
        gj["batches"] = batches;
        gj["max_over_mean"] = {{"mean", mmStat.mean}, {"sd", mmStat.sd}};
        gj["alpha"] = batches ? ojson(fit.alpha) : ojson();
        gj["alpha_bound"] = bound;
        ojson giniJ;
        for (int ep : eps) {
          std::vector<double> gs;
          for (const auto &c : batchCounts)
            gs.push_back(gini(rankLoads(c, ep)));
          const MeanSd st = meanSd(gs);
          giniJ[std::to_string(ep)] = {{"mean", st.mean}, {"sd", st.sd}};
          if (g == classifyGbs && ep == classifyEp && batches)
            giniAtClass = st.mean;
          if (listed && std::find(epList.begin(), epList.end(), ep) != epList.end())
            csv += o.modelPath + "," + spec.name + "," + toString(spec.kind) + "," +
                   std::to_string(l) + "," + std::to_string(g) + "," + std::to_string(ep) + "," +
                   std::to_string(batches) + "," +
                   (batches ? fmt(st.mean, "%.6f") + "," + fmt(st.sd, "%.6f") + "," +
                                  fmt(mmStat.mean, "%.6f") + "," + fmt(mmStat.sd, "%.6f") + "," +
                                  fmt(fit.alpha, "%.6g") + "," + bound
                            : std::string(",,,,,")) +
                   "\n";
        }
        gj["gini"] = giniJ;
        if (g == classifyGbs && batches) {
          mmAtClass = mmStat.mean;
          alphaAtClass = fit.alpha;
        }
        byGbs.push_back(gj);
      }
      lj["by_gbs"] = byGbs;
      cj["layers"].push_back(lj);
      cs.giniByLayer.push_back(giniAtClass);
      cs.maxOverMeanByLayer.push_back(mmAtClass);
      cs.alphaByLayer.push_back(alphaAtClass);
    }
    double sum = 0;
    int n = 0;
    for (double g : cs.giniByLayer)
      if (g >= 0)
        sum += g, ++n;
    cs.meanGini = n ? sum / n : -1;
    doc["conditions"].push_back(cj);
    summary.conditions.push_back(cs);

    if (spec.name == profileCondition && !profileWritten) {
      ojson profile;
      profile["format"] = "disagmoe-routing-profile";
      profile["version"] = 1;
      profile["model"] = o.modelPath;
      profile["data"] = spec.kind == DataKind::Mock
                            ? std::string("mock")
                            : std::string(toString(spec.kind)) + ":" + spec.file;
      profile["tokens"] = used;
      profile["top_k"] = k;
      profile["layers"] = profileLayers;
      writeFile(o.outDir + "/routing-profile.json", profile.dump(1) + "\n");
      profileWritten = true;
    }
  }

  // Classification (docs/observatory.md): the mean real-text Gini at the classification EP and GBS.
  double realSum = 0;
  int realN = 0;
  for (const ConditionSummary &c : summary.conditions) {
    if (c.kind == DataKind::Text && c.meanGini >= 0)
      realSum += c.meanGini, ++realN;
    if (c.kind == DataKind::Mock && c.meanGini >= 0 && summary.mockGini < 0)
      summary.mockGini = c.meanGini;
  }
  summary.realGini = realN ? realSum / realN : -1;
  summary.classification = toString(classify(summary.realGini));
  ojson cl;
  cl["ep"] = classifyEp;
  cl["gbs"] = classifyGbs;
  cl["real_text_gini"] = summary.realGini >= 0 ? ojson(summary.realGini) : ojson();
  cl["mock_gini"] = summary.mockGini >= 0 ? ojson(summary.mockGini) : ojson();
  cl["mock_over_real"] = summary.realGini > 0 && summary.mockGini >= 0
                             ? ojson(summary.mockGini / summary.realGini)
                             : ojson();
  cl["class"] = summary.classification;
  cl["thresholds"] = {{"data_resilient_below", kResilientMaxGini},
                      {"concentrated_at_or_above", kConcentratedMinGini}};
  doc["classification"] = cl;
  summary.totalSeconds = seconds(t0, Clock::now());
  doc["timing"] = {{"forward_seconds", summary.forwardSeconds},
                   {"forward_tokens", summary.forwardTokens},
                   {"total_seconds", summary.totalSeconds}};
  doc["profile"] = profileWritten ? ojson(profileCondition) : ojson();
  writeFile(o.outDir + "/route-stats.json", doc.dump(1) + "\n");
  writeFile(o.outDir + "/route-stats.csv", csv);
  if (!profileWritten)
    return fail("--profile-data " + profileCondition + ": no such --data condition");
  return llvm::Error::success();
}

} // namespace

std::string checkEpDegrees(const std::vector<int> &ep, int64_t experts) {
  for (int d : ep) {
    if (d < 1)
      return "--ep " + std::to_string(d) + ": an EP degree is at least 1";
    if (d > experts)
      return "--ep " + std::to_string(d) + ": EP degree above the model's " +
             std::to_string(experts) +
             " experts (every EP rank must hold at least one expert); use --ep values <= " +
             std::to_string(experts);
  }
  return "";
}

llvm::Error runRouteStats(const RouteStatsOptions &options, RouteStatsSummary &summary,
                          std::ostream &log) noexcept {
  try {
    std::filesystem::create_directories(options.outDir);
    return run(options, summary, log);
  } catch (const std::exception &e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown failure");
  }
}

} // namespace disagmoe::observatory
