package io.sluice.core.admission;

import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The CPU time of one LLM-shaped decision and release of the embedded default policy's pool on its
 * own thread, in a plain loop: a request with its token split (441 in, 73 out) admitted, then
 * released as completed 12 µs later (its service time teaches the pool's tails and model), the next
 * one 15 µs after the last. For comparing two jars run alternately (the part of the stream {@code
 * AdmittedStreamCpu llm} cannot resolve alone).
 *
 * <pre>
 * java -cp server/target/benchmarks.jar io.sluice.core.admission.AdmitReleaseCpu
 * </pre>
 */
public final class AdmitReleaseCpu {
  private AdmitReleaseCpu() {}

  public static void main(String[] args) {
    SluiceConfig config = ConfigLoader.embeddedDefault();
    AdmissionController controller = Controllers.forPolicy(config, () -> 0.5);
    PoolPolicy pool = config.pools().values().iterator().next();
    ClassPolicy interactive = config.classes().get("interactive");
    Tenant tenant = new Tenant("acme", config.tiers().values().iterator().next());
    long now = 1_000_000_000L;
    long sink = 0;
    for (int i = 0; i < 2_000_000; i++) {
      sink += once(controller, pool, interactive, tenant, now);
      now += 15_000;
    }
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    StringBuilder out = new StringBuilder("cpu ns/op (5 x 1M):");
    for (int k = 0; k < 5; k++) {
      long before = mx.getCurrentThreadCpuTime();
      for (int i = 0; i < 1_000_000; i++) {
        sink += once(controller, pool, interactive, tenant, now);
        now += 15_000;
      }
      out.append(' ').append((mx.getCurrentThreadCpuTime() - before) / 1_000_000);
    }
    System.out.println(out);
    System.out.println("(" + sink + ")");
  }

  private static long once(
      AdmissionController controller, PoolPolicy pool, ClassPolicy cls, Tenant tenant, long now) {
    AdmissionRequest r =
        new AdmissionRequest(pool, cls, tenant, 514, now, now + 30_000_000_000L, 441, 73);
    Decision d = controller.decide(r, Ask.now(now));
    if (!(d instanceof Decision.Admit a)) {
      throw new IllegalStateException("not admitted: " + d);
    }
    a.permit().release(Outcome.COMPLETED, now + 12_000);
    return a.permit().workUnits();
  }
}
