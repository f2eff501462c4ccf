package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.core.permit.PermitLeases;
import io.sluice.core.permit.PermitLeases.State;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link PermitLeases}'s contract, on each backend: a lease granted, renewed and released once (a
 * second release, a renew after it: false); a killed caller's lease expires (read as expired, not
 * gone); a lease granted at one replica is released at another, once; the live leases of a pool are
 * bounded and an id is granted once.
 */
public abstract class PermitLeasesContractTest {
  protected static final long LONG_TTL = 60_000;

  /** The store as replica A sees it. */
  protected abstract PermitLeases store();

  /** The store as another replica sees it (the same shared state). */
  protected abstract PermitLeases otherReplica();

  /** A namespace no other test writes under. */
  protected abstract String namespace();

  /** Lets {@code millis} pass on the store's clock (a fake clock, or a bounded real wait). */
  protected abstract void pass(long millis) throws Exception;

  protected static <T> T get(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(5, TimeUnit.SECONDS);
  }

  protected PermitLeases.Scope scope() {
    return new PermitLeases.Scope(namespace(), "pg");
  }

  @Test
  void grantRenewRelease_theSecondReleaseIsANoOp() throws Exception {
    PermitLeases.Scope s = scope();
    assertThat(get(store().grant(s, "pg/a-1", 10, LONG_TTL))).isTrue();
    assertThat(get(store().states(s, List.of("pg/a-1")))).containsEntry("pg/a-1", State.LIVE);
    assertThat(get(store().renew(s, "pg/a-1", LONG_TTL))).isTrue();
    assertThat(get(store().release(s, "pg/a-1"))).as("the release").isTrue();
    assertThat(get(store().release(s, "pg/a-1"))).as("a second release").isFalse();
    assertThat(get(store().renew(s, "pg/a-1", LONG_TTL))).as("renew after release").isFalse();
    assertThat(get(store().states(s, List.of("pg/a-1", "pg/never"))))
        .isEqualTo(Map.of("pg/a-1", State.GONE, "pg/never", State.GONE));
  }

  @Test
  void aKilledCallersLeaseExpires_readAsExpired_neitherRenewedNorReleased() throws Exception {
    PermitLeases.Scope s = scope();
    assertThat(get(store().grant(s, "pg/dead", 10, 1_000))).isTrue();
    assertThat(get(store().grant(s, "pg/live", 10, 1_000))).isTrue();
    pass(300);
    assertThat(get(store().renew(s, "pg/live", 10_000))).isTrue();
    pass(1_200);
    assertThat(get(store().states(s, List.of("pg/dead", "pg/live"))))
        .isEqualTo(Map.of("pg/dead", State.EXPIRED, "pg/live", State.LIVE));
    assertThat(get(store().renew(s, "pg/dead", LONG_TTL))).isFalse();
    assertThat(get(store().release(s, "pg/dead"))).isFalse();
    assertThat(get(store().release(s, "pg/live"))).isTrue();
  }

  @Test
  void grantedAtOneReplica_renewedAndReleasedAtAnother_once() throws Exception {
    PermitLeases.Scope s = scope();
    assertThat(get(store().grant(s, "pg/a-7", 10, LONG_TTL))).isTrue();
    assertThat(get(otherReplica().renew(s, "pg/a-7", LONG_TTL))).isTrue();
    assertThat(get(otherReplica().release(s, "pg/a-7"))).as("at B").isTrue();
    assertThat(get(store().release(s, "pg/a-7"))).as("then at A").isFalse();
    assertThat(get(store().states(s, List.of("pg/a-7")))).containsEntry("pg/a-7", State.GONE);
  }

  @Test
  void aPoolsLiveLeasesAreBounded_anIdIsGrantedOnce() throws Exception {
    PermitLeases.Scope s = scope();
    for (int i = 0; i < 3; i++) {
      assertThat(get(store().grant(s, "pg/b-" + i, 3, LONG_TTL))).isTrue();
    }
    assertThat(get(otherReplica().grant(s, "pg/c-1", 3, LONG_TTL))).as("over the bound").isFalse();
    assertThat(
            get(
                store()
                    .grant(new PermitLeases.Scope(namespace(), "other"), "other/x", 3, LONG_TTL)))
        .as("another pool")
        .isTrue();
    assertThat(get(store().release(s, "pg/b-0"))).isTrue();
    assertThat(get(store().grant(s, "pg/b-1", 3, LONG_TTL))).as("an id held").isFalse();
    assertThat(get(otherReplica().grant(s, "pg/c-1", 3, LONG_TTL))).isTrue();
  }

  /**
   * Issue 37: {@code end} tells a release from a release after expiry, each answered to exactly one
   * call (at either replica), and a late-released record reads as such until it leaves; it is not
   * live (the pool's bound does not count it).
   */
  @Test
  void end_aReleaseAfterExpiry_isAnsweredOnce_andReadAsSuch() throws Exception {
    PermitLeases.Scope s = scope();
    assertThat(get(store().grant(s, "pg/late", 1, 1_000))).isTrue();
    assertThat(get(store().grant(s, "pg/swept", 10, 1_000))).isTrue();
    pass(1_200);
    assertThat(get(otherReplica().end(s, "pg/late"))).isEqualTo(PermitLeases.Ended.AFTER_EXPIRY);
    assertThat(get(store().end(s, "pg/late")))
        .as("a second end")
        .isEqualTo(PermitLeases.Ended.GONE);
    assertThat(get(store().release(s, "pg/late"))).isFalse();
    assertThat(get(store().states(s, List.of("pg/late", "pg/swept"))))
        .isEqualTo(Map.of("pg/late", State.RELEASED_AFTER_EXPIRY, "pg/swept", State.EXPIRED));
    assertThat(get(store().renew(s, "pg/late", LONG_TTL))).isFalse();
    assertThat(get(store().grant(s, "pg/next", 1, LONG_TTL))).as("not live").isTrue();
    assertThat(get(otherReplica().end(s, "pg/next"))).isEqualTo(PermitLeases.Ended.RELEASED);
    assertThat(get(store().end(s, "pg/next"))).isEqualTo(PermitLeases.Ended.GONE);
  }
}
