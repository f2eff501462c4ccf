package io.sluice.harness;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A run's offered and completed logical requests by class, tenant and arrival phase; the rows of
 * {@link RunReport#byClass()}, {@link RunReport#byTenant()} and {@link RunReport#byPhase()}. Not
 * thread-safe: changed and read under its {@link RunTally}'s lock.
 */
final class GroupTally {
  private final List<Workload.Phase> phases;
  private final Map<String, long[]> byClass = new LinkedHashMap<>();
  private final Map<String, long[]> byTenant = new LinkedHashMap<>();
  private final long[][] byPhase;

  GroupTally(Workload workload) {
    this.phases = workload.phases();
    for (Workload.RequestClass c : workload.classes()) {
      byClass.put(c.name(), new long[2]);
    }
    for (Workload.Tenant t : workload.tenants()) {
      byTenant.put(t.name(), new long[2]);
    }
    byPhase = new long[phases.size()][2];
  }

  void arrived(Logical l) {
    Objects.requireNonNull(byClass.get(l.requestClass.name()))[0]++;
    Objects.requireNonNull(byTenant.get(l.tenant.name()))[0]++;
    byPhase[l.phaseIndex][0]++;
  }

  /** {@code l} completed during phase {@code phase} (-1: outside every phase). */
  void completed(Logical l, int phase) {
    Objects.requireNonNull(byClass.get(l.requestClass.name()))[1]++;
    Objects.requireNonNull(byTenant.get(l.tenant.name()))[1]++;
    if (phase >= 0) {
      byPhase[phase][1]++;
    }
  }

  Map<String, RunReport.Split> classes() {
    return splits(byClass);
  }

  Map<String, RunReport.Split> tenants() {
    return splits(byTenant);
  }

  List<RunReport.PhaseRow> phases() {
    List<RunReport.PhaseRow> rows = new ArrayList<>();
    for (int p = 0; p < phases.size(); p++) {
      Workload.Phase ph = phases.get(p);
      rows.add(
          new RunReport.PhaseRow(
              ph.label(),
              ph.duration().toNanos() / 1e9,
              ph.ratePerSecond(),
              byPhase[p][0],
              byPhase[p][1]));
    }
    return rows;
  }

  private static Map<String, RunReport.Split> splits(Map<String, long[]> counts) {
    Map<String, RunReport.Split> out = new LinkedHashMap<>();
    counts.forEach((k, v) -> out.put(k, new RunReport.Split(v[0], v[1])));
    return out;
  }
}
