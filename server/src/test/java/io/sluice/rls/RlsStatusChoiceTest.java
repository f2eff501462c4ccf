package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.rls.RlsDecision.Code;
import io.sluice.rls.RlsDecision.Decided;
import io.sluice.rls.RlsRequest.Descriptor;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Which limit a descriptor's status reports when it has several: the first denying one in limit
 * order, else the one with least left (the first of them in limit order) — whatever order the store
 * answers come back in (token buckets are answered after the fixed windows).
 */
class RlsStatusChoiceTest {
  static final String YAML =
      """
      domain: d
      descriptors:
        - key: both
          rate_limits:
            - {name: bucket, unit: second, requests_per_unit: 3, algorithm: token_bucket}
            - {name: window, unit: minute, requests_per_unit: 3}
        - key: over
          rate_limits:
            - {name: bucket, unit: hour, requests_per_unit: 1, algorithm: token_bucket}
            - {name: window, unit: hour, requests_per_unit: 1}
        - key: least
          rate_limits:
            - {name: wide, unit: minute, requests_per_unit: 10}
            - {name: bucket, unit: second, requests_per_unit: 2, algorithm: token_bucket}
      """;

  final RlsFixture f = new RlsFixture(YAML);

  @Test
  void tie_sameRemaining_firstLimitInOrder_evenWhenAnsweredLast() {
    Decided r = f.decided("d", Descriptor.of("both", "x"));
    assertThat(r.statuses().get(0).limitRemaining()).isEqualTo(2);
    assertThat(r.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
  }

  @Test
  void bothDenying_firstLimitInOrder_evenWhenAnsweredLast() {
    f.decided("d", Descriptor.of("over", "x"));
    Decided r = f.decided("d", Descriptor.of("over", "x"));
    assertThat(r.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
  }

  @Test
  void leastLeft_wins_thenDenyingWins() {
    Decided first = f.decided("d", Descriptor.of("least", "x"));
    assertThat(first.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
    assertThat(first.statuses().get(0).limitRemaining()).isEqualTo(1);
    f.decided("d", Descriptor.of("least", "x"));
    Decided denied = f.decided("d", Descriptor.of("least", "x"));
    assertThat(denied.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(denied.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
    f.clock.advance(Duration.ofSeconds(2)); // refilled: 1 left after this call, the window 6
    Decided later = f.decided("d", Descriptor.of("least", "x"));
    assertThat(later.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
  }

  @Test
  void severalDescriptors_eachGetsItsOwnChoice() {
    Decided r =
        f.decided(
            "d",
            Descriptor.of("both", "x"),
            Descriptor.of("nothing", "y"),
            Descriptor.of("over", "x"));
    assertThat(r.statuses()).hasSize(3);
    assertThat(r.statuses().get(0).currentLimit().name()).isEqualTo("bucket");
    assertThat(r.statuses().get(1).currentLimit()).isNull();
    assertThat(r.statuses().get(2).currentLimit().name()).isEqualTo("bucket");
  }
}
