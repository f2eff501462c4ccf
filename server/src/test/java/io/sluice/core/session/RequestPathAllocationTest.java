package io.sluice.core.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.core.admission.Outcome;
import io.sluice.core.estimate.FanOut;
import io.sluice.core.estimate.LearnedBytesPerToken;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.TenantQuotas;
import io.sluice.core.time.FakeTicker;
import io.sluice.store.memory.InMemoryStore;
import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * What the admitted stream's parts allocate per request (docs/benchmarks/request-path-history.md,
 * "Admitted stream since 2026-12-03, by part"): the parts that allocated nothing before and grew an
 * object per request, measured with the thread's allocated bytes over a few thousand calls
 * (interpreted or C1-compiled, so no escape analysis hides an allocation), each beside a call that
 * does allocate (the measure sees allocation).
 */
class RequestPathAllocationTest {
  private static final int N = 5_000; // few enough calls that C2 does not compile them away

  private static long allocatedBy(LongSupplier call) {
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assumeTrue(mx.isThreadAllocatedMemorySupported() && mx.isThreadAllocatedMemoryEnabled());
    long tid = Thread.currentThread().getId();
    long sink = 0;
    long before = mx.getThreadAllocatedBytes(tid);
    for (int i = 0; i < N; i++) {
      sink += call.getAsLong();
    }
    long allocated = mx.getThreadAllocatedBytes(tid) - before;
    assertThat(sink).isNotEqualTo(Long.MIN_VALUE); // read: the calls are not dead code
    return allocated;
  }

  @Test
  void fanOutWork_allocatesNothingPerRequest() {
    FanOutPolicy p = new FanOutPolicy(10, 20, 30, 40);
    FanOut f = new FanOut(2, true, true);
    assertThat(p.workUnits(f, 3)).isEqualTo(2 * 10 + 20 + 30 + 3 * 40);
    long none = allocatedBy(() -> p.workUnits(f, 3));
    assertThat(none).as("bytes for %d fan-out sums", N).isLessThan(N);
    long some = allocatedBy(() -> new long[] {p.workUnits(f, 3)}.length);
    assertThat(some).as("bytes for %d arrays (the measure sees them)", N).isGreaterThan(N * 16L);
  }

  @Test
  void learnedBytesPerToken_ofAPool_allocatesNothingPerRequest() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(LearnedBytesPerToken.Settings.DEFAULTS);
    // one answer learned first: a learner that has made no key reads nothing at all (its prior),
    // and this test is about the reads of one that has
    assertThat(l.learn("gpu", "m-z", "t", 4000, 1000, 0)).isTrue();
    l.bytesPerToken("gpu", null); // its key made once
    long none = allocatedBy(() -> (long) l.bytesPerToken("gpu", null));
    assertThat(none).as("bytes for %d pool ratios", N).isLessThan(N);
    l.bytesPerToken("gpu", "m-a"); // the last model's key is kept: the same model again makes none
    long sameModel = allocatedBy(() -> (long) l.bytesPerToken("gpu", "m-a"));
    assertThat(sameModel).as("bytes for %d ratios of one model", N).isLessThan(N);
    String[] models = {"m-a", "m-b"}; // two models in turn: a key each (the measure sees them)
    int[] i = {0};
    long some = allocatedBy(() -> (long) l.bytesPerToken("gpu", models[i[0]++ & 1]));
    assertThat(some).as("bytes for %d model ratios (a key each)", N).isGreaterThan(N * 16L);
  }

  @Test
  void anAdmittedRequestsEndFacts_beforeItsAnswer_areShared() {
    Clock clock = Clock.fixed(Instant.ofEpochMilli(1_800_000_000_000L), ZoneOffset.UTC);
    InMemoryStore store = new InMemoryStore(clock, InMemoryStore.Bounds.DEFAULT);
    Sessions env =
        OneSlotPool.sessions(
            OneSlotPool.controller(),
            new TenantQuotas(store, "test_", TenantQuotas.FailureMode.OPEN),
            new FakeTicker(),
            clock,
            new AdmissionSessionTest.ManualTimer(),
            SessionListener.NONE);
    Tenant t = new Tenant("acme", new TierPolicy("pro", 1, 0, 0, 0, 0));
    ResponseMeter m = new ResponseMeter(env, OneSlotPool.chat(t, 0, null, 0));
    RequestFacts.End before = m.facts(null, null);
    assertThat(m.facts(null, null)).isSameAs(before); // nothing allocated per event
    assertThat(before).isEqualTo(new RequestFacts.End(0, "seen", false, Charge.NONE, false, -1));
    assertThat(m.facts("reset", null)).isNotSameAs(before).isNotEqualTo(before);
    m.end(Outcome.CANCELLED, null);
    assertThat(m.facts(null, null)).isSameAs(before); // never estimated: nothing charged
  }
}
