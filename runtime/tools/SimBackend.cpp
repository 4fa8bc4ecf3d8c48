// disagmoe-run's `sim` backend: replays the plan's schedule, prints step stats (SimBackend.h).
#include "runtime/tools/SimBackend.h"

#include "runtime/sim/Simulator.h"

#include <cstdio>
#include <stdexcept>

namespace disagmoe::tools {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string rankRange(const sched::Group &g) {
  std::string s;
  for (size_t r = 0; r < g.ranks.size(); ++r)
    for (int rank : g.ranks[r])
      s += (s.empty() ? "" : ",") + std::to_string(rank);
  return s;
}

} // namespace

int runSimBackend(const Plan &plan, const SimRunOptions &options, std::ostream &out) {
  if (!plan.schedule)
    throw std::runtime_error(plan.path +
                             ": schedule: missing (the sim backend replays the plan's schedule "
                             "section; compile the plan with this version of disagmoe compile)");
  const sched::Schedule &s = *plan.schedule;
  sim::OpTimes times;
  std::string error;
  if (!options.opTimes.empty() && !times.load(options.opTimes, error))
    throw std::runtime_error(error);
  sim::SimOptions so;
  so.opTimes = options.opTimes.empty() ? nullptr : &times;
  so.recordTimes = !options.trace.empty();
  so.hostCores = static_cast<double>(options.hostCores);
  const sim::SimResult r = sim::simulate(s, so);
  if (!r.ok)
    throw std::runtime_error(plan.path + ": schedule: " + r.error);

  out << "plan: " << plan.path << " (" << s.kind << " schedule, " << s.worldSize() << " ranks, "
      << s.microBatches << " micro-batches, " << s.pipelineStages << " pipeline stages x "
      << s.virtualStages << " virtual, on " << s.hw.name << ")\n";
  out << "times: "
      << (options.opTimes.empty() ? "roofline (runtime/cost)" : "measured, " + options.opTimes)
      << "\n";
  if (options.hostCores > 0)
    out << "host: the ranks' threads share " << options.hostCores
        << " CPU cores (processor sharing)\n";
  out << "\n";
  out << "step time: " << fixed(r.stepTime * 1e3, 6) << " ms\n";
  out << "bubble fraction: " << fixed(r.bubbleFraction, 4)
      << " (mean idle share of the step over all ranks)\n";
  out << "exposed communication: " << fixed(r.exposedComm * 1e3, 6) << " ms per rank (of "
      << fixed(r.commActive * 1e3, 6) << " ms with an exchange in flight)\n";
  char mfu[32];
  std::snprintf(mfu, sizeof mfu, "%.6g", r.mfu);
  out << "MFU: " << mfu << " (" << s.modelFlops << " model FLOPs at " << s.hw.peakFlops / 1e12
      << " TFLOP/s peak per rank)\n\n";
  // Every rank of a group runs the same instructions on the busiest rank's work (Simulator.h), so
  // per-rank figures are their group's.
  out << "per rank (ranks of a group share its figures):\n";
  out << "group            ranks                busy ms      idle ms   exposed comm ms\n";
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const sim::GroupStats &st = r.groups[g];
    char line[256];
    std::snprintf(line, sizeof line, "%-16s %-16s %12.6f %12.6f %12.6f\n",
                  (s.groups[g].role + " " + std::to_string(s.groups[g].index)).c_str(),
                  rankRange(s.groups[g]).c_str(), st.busy * 1e3, (r.stepTime - st.busy) * 1e3,
                  st.exposedComm * 1e3);
    out << line;
  }
  out << "\nsimulated " << r.instructions << " instructions, " << r.events << " events in "
      << fixed(r.wallSeconds, 3) << " s\n";
  if (!options.trace.empty()) {
    if (!sim::writeChromeTrace(s, r, options.trace, error))
      throw std::runtime_error(error);
    out << "trace: " << options.trace << "\n";
  }
  return 0;
}

} // namespace disagmoe::tools
