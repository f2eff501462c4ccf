package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.rls.RlsDecision.Code;
import io.sluice.rls.RlsDecision.Decided;
import io.sluice.rls.RlsDecision.Failed;
import io.sluice.rls.RlsDecision.Header;
import io.sluice.rls.RlsDecision.Status;
import io.sluice.rls.RlsRequest.Descriptor;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class RateLimitEvaluatorTest {
  static final String YAML =
      """
      domain: d
      descriptors:
        - key: user
          rate_limit: {name: per_user, unit: minute, requests_per_unit: 3}
        - key: vip
          rate_limit: {name: vip, unit: minute, requests_per_unit: 100, replaces: [{name: per_user}]}
        - key: free
          rate_limit: {unlimited: true}
        - key: shadow
          shadow_mode: true
          rate_limit: {unit: second, requests_per_unit: 1}
        - key: banned
          rate_limit: {unit: second, requests_per_unit: 0}
        - key: tenant
          rate_limits:
            - {name: burst, unit: second, requests_per_unit: 2}
            - {name: sustained, unit: minute, unit_multiplier: 5, requests_per_unit: 4}
        - key: tb
          rate_limit: {unit: second, requests_per_unit: 10, algorithm: token_bucket}
        - key: quota_a
          quota_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: quota_b
          quota_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: near
          rate_limit: {unit: hour, requests_per_unit: 10}
        - key: local
          rate_limit: {unit: minute, requests_per_unit: 10, failure_mode: local}
        - key: closed
          rate_limit: {unit: minute, requests_per_unit: 10, failure_mode: closed}
      """;

  final RlsFixture f = new RlsFixture(YAML, "SLUICE_RLS_EXPECTED_REPLICAS", "2");

  @Test
  void fixedWindow_countsUpToLimit_thenOverLimitWithReset() {
    f.clock.advance(Duration.ofSeconds(15));
    List<Long> remaining = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Decided r = f.decided("d", Descriptor.of("user", "alice"));
      assertThat(r.overall()).isEqualTo(Code.OK);
      remaining.add(r.statuses().get(0).limitRemaining());
    }
    assertThat(remaining).containsExactly(2L, 1L, 0L);
    Decided over = f.decided("d", Descriptor.of("user", "alice"));
    Status s = over.statuses().get(0);
    assertThat(over.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(s.code()).isEqualTo(Code.OVER_LIMIT);
    assertThat(s.limitRemaining()).isZero();
    assertThat(s.currentLimit().name()).isEqualTo("per_user");
    // 1700000015 mod 60 = 35 -> 25 s left in the minute
    assertThat(s.resetSeconds()).isEqualTo(25);
    assertThat(over.headers()).containsExactly(new Header("retry-after", "25"));
    assertThat(f.decided("d", Descriptor.of("user", "bob")).overall()).isEqualTo(Code.OK);
  }

  @Test
  void cacheKey_matchesTheReferenceLayout() {
    f.clock.advance(Duration.ofSeconds(15));
    f.decided("d", Descriptor.of("user", "alice"));
    assertThat(f.store.counterValue("d_user_alice_1699999980")).isEqualTo(1);
  }

  @Test
  void cacheKey_withPrefixAndWindowRollover_newCounter() {
    RlsFixture p = new RlsFixture(YAML, "CACHE_KEY_PREFIX", "rl_");
    p.decided("d", Descriptor.of("user", "alice"));
    assertThat(p.store.counterValue("rl_d_user_alice_1699999980")).isEqualTo(1);
    p.clock.advance(Duration.ofSeconds(40));
    p.decided("d", Descriptor.of("user", "alice"));
    assertThat(p.store.counterValue("rl_d_user_alice_1700000040")).isEqualTo(1);
    assertThat(p.store.counterValue("rl_d_user_alice_1699999980")).isEqualTo(1);
  }

  @Test
  void hitsAddend_descriptorZero_checksWithoutConsuming() {
    f.decided("d", Descriptor.of("user", "a"));
    Decided check = f.decided("d", Descriptor.of("user", "a").withHitsAddend(0));
    assertThat(check.statuses().get(0).limitRemaining()).isEqualTo(2);
    assertThat(f.decided("d", Descriptor.of("user", "a")).statuses().get(0).limitRemaining())
        .isEqualTo(1);
  }

  @Test
  void hitsAddend_requestLevel_usedWhenDescriptorHasNone_descriptorWins() {
    Decided r =
        (Decided)
            f.call(
                new RlsRequest(
                    "d",
                    List.of(
                        Descriptor.of("near", "x"), Descriptor.of("user", "u").withHitsAddend(1)),
                    4));
    assertThat(r.statuses().get(0).limitRemaining()).isEqualTo(6);
    assertThat(r.statuses().get(1).limitRemaining()).isEqualTo(2);
  }

  @Test
  void hitsAddend_largerThanLeft_rejectedAndStillCounted() {
    f.decided("d", Descriptor.of("near", "x").withHitsAddend(8));
    Decided big = f.decided("d", Descriptor.of("near", "x").withHitsAddend(5));
    assertThat(big.overall()).isEqualTo(Code.OVER_LIMIT);
    Decided check = f.decided("d", Descriptor.of("near", "x").withHitsAddend(0));
    assertThat(check.overall()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void nearAndOverLimitStats_splitTheWeightLikeTheReference() {
    f.decided("d", Descriptor.of("near", "x").withHitsAddend(7));
    f.decided("d", Descriptor.of("near", "x").withHitsAddend(5));
    // limit 10, near threshold 8: first call 7 within; second 7->12: 2 over, 8..10 = 2 near
    assertThat(f.counter(RlsMetrics.TOTAL_HITS, "near")).isEqualTo(12);
    assertThat(f.counter(RlsMetrics.WITHIN_LIMIT, "near")).isEqualTo(7);
    assertThat(f.counter(RlsMetrics.OVER_LIMIT, "near")).isEqualTo(2);
    assertThat(f.counter(RlsMetrics.NEAR_LIMIT, "near")).isEqualTo(2);
  }

  @Test
  void unlimited_okWithMaxRemainingAndNoLimit() {
    Status s = f.decided("d", Descriptor.of("free", "x")).statuses().get(0);
    assertThat(s).isEqualTo(new Status(Code.OK, null, 4294967295L, -1));
    assertThat(f.store.size()).isZero();
  }

  @Test
  void noMatch_okWithZeroRemainingAndNoLimit() {
    Decided r = f.decided("d", Descriptor.of("nothing", "x"));
    assertThat(r.statuses().get(0)).isEqualTo(new Status(Code.OK, null, 0, -1));
    assertThat(f.decided("unknown", Descriptor.of("user", "x")).statuses().get(0).currentLimit())
        .isNull();
  }

  @Test
  void banned_zeroRequestsPerUnit_alwaysOverLimit() {
    assertThat(f.decided("d", Descriptor.of("banned", "1.2.3.4")).overall())
        .isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void shadowMode_overLimitReportedOkAndCounted() {
    f.decided("d", Descriptor.of("shadow", "x"));
    Decided r = f.decided("d", Descriptor.of("shadow", "x"));
    assertThat(r.overall()).isEqualTo(Code.OK);
    assertThat(r.statuses().get(0).code()).isEqualTo(Code.OK);
    assertThat(r.statuses().get(0).limitRemaining()).isZero();
    assertThat(r.statuses().get(0).currentLimit()).isNotNull();
    assertThat(f.counter(RlsMetrics.SHADOW_MODE, "shadow")).isEqualTo(1);
  }

  @Test
  void globalShadowMode_overallOkStatusesKeepCodes() {
    RlsFixture g = new RlsFixture(YAML, "SHADOW_MODE", "true");
    Decided r = g.decided("d", Descriptor.of("banned", "x"));
    assertThat(r.overall()).isEqualTo(Code.OK);
    assertThat(r.statuses().get(0).code()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.headers()).isEmpty();
    assertThat(g.registry.counter(RlsMetrics.GLOBAL_SHADOW_MODE).count()).isEqualTo(1);
  }

  @Test
  void replaces_replacedLimitDroppedAndNotCounted() {
    for (int i = 0; i < 5; i++) {
      Decided r = f.decided("d", Descriptor.of("user", "a"), Descriptor.of("vip", "a"));
      assertThat(r.overall()).isEqualTo(Code.OK);
      assertThat(r.statuses().get(0)).isEqualTo(new Status(Code.OK, null, 0, -1));
    }
    assertThat(f.decided("d", Descriptor.of("user", "a")).statuses().get(0).limitRemaining())
        .isEqualTo(2);
  }

  @Test
  void override_requestLimitUsedEvenWithoutConfigMatch() {
    Decided r = f.decided("d", Descriptor.of("anything", "x").withOverride(1, 1));
    assertThat(r.statuses().get(0).currentLimit().requestsPerUnit()).isEqualTo(1);
    assertThat(f.decided("d", Descriptor.of("anything", "x").withOverride(1, 1)).overall())
        .isEqualTo(Code.OVER_LIMIT);
    assertThat(f.decided("nodomain", Descriptor.of("anything", "x").withOverride(1, 0)).overall())
        .isEqualTo(Code.OK);
  }

  @Test
  void severalLimits_burstThenSustained() {
    assertThat(f.decided("d", Descriptor.of("tenant", "t")).overall()).isEqualTo(Code.OK);
    Decided second = f.decided("d", Descriptor.of("tenant", "t"));
    assertThat(second.statuses().get(0).currentLimit().name()).isEqualTo("burst");
    Decided burst = f.decided("d", Descriptor.of("tenant", "t"));
    assertThat(burst.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(burst.statuses().get(0).currentLimit().name()).isEqualTo("burst");
    f.clock.advance(Duration.ofSeconds(1));
    f.decided("d", Descriptor.of("tenant", "t"));
    f.clock.advance(Duration.ofSeconds(1));
    Decided sustained = f.decided("d", Descriptor.of("tenant", "t"));
    assertThat(sustained.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(sustained.statuses().get(0).currentLimit().name()).isEqualTo("sustained");
    // 5-minute windows aligned to the epoch: 1700000000 is a multiple of 300? 1700000000 mod 300 =
    // 200
    assertThat(sustained.statuses().get(0).resetSeconds()).isEqualTo(300 - 202);
    assertThat(f.store.counterValue("d_tenant_t_l1w300_1699999800")).isEqualTo(5);
  }

  @Test
  void tokenBucket_refillsContinuously() {
    for (int i = 0; i < 10; i++) {
      assertThat(f.decided("d", Descriptor.of("tb", "x")).overall()).isEqualTo(Code.OK);
    }
    Decided denied = f.decided("d", Descriptor.of("tb", "x"));
    assertThat(denied.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(denied.statuses().get(0).resetSeconds()).isEqualTo(1);
    f.clock.advance(Duration.ofMillis(300));
    assertThat(f.decided("d", Descriptor.of("tb", "x")).statuses().get(0).limitRemaining())
        .isEqualTo(2);
  }

  @Test
  void quotaMode_overOnlyWhenAllQuotaDescriptorsOver() {
    f.decided("d", Descriptor.of("quota_a", "x"));
    Decided oneOver = f.decided("d", Descriptor.of("quota_a", "x"), Descriptor.of("quota_b", "x"));
    assertThat(oneOver.statuses().get(0).code()).isEqualTo(Code.OVER_LIMIT);
    assertThat(oneOver.overall()).isEqualTo(Code.OK);
    Decided both = f.decided("d", Descriptor.of("quota_a", "x"), Descriptor.of("quota_b", "x"));
    assertThat(both.overall()).isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void overall_anyDescriptorOver_overLimit_otherStillCounted() {
    Decided r = f.decided("d", Descriptor.of("user", "a"), Descriptor.of("banned", "x"));
    assertThat(r.overall()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.statuses()).extracting(Status::code).containsExactly(Code.OK, Code.OVER_LIMIT);
    assertThat(f.decided("d", Descriptor.of("user", "a")).statuses().get(0).limitRemaining())
        .isEqualTo(1);
  }

  @Test
  void strictMode_noRetryAfter_limitHeadersWhenEnabled() {
    RlsFixture s =
        new RlsFixture(YAML, "SLUICE_RLS_STRICT", "true", "LIMIT_RESPONSE_HEADERS_ENABLED", "true");
    Decided r = s.decided("d", Descriptor.of("user", "a"), Descriptor.of("banned", "x"));
    assertThat(r.headers())
        .containsExactly(
            new Header("RateLimit-Limit", "0"),
            new Header("RateLimit-Remaining", "0"),
            new Header("RateLimit-Reset", "1"));
    Decided ok = s.decided("d", Descriptor.of("near", "a"), Descriptor.of("user", "a"));
    assertThat(ok.headers()).extracting(Header::value).containsExactly("3", "1", "40");
  }

  @Test
  void validation_errorsAsFailedValues() {
    assertThat(f.call(new RlsRequest("", List.of(Descriptor.of("a", "b")), 0)))
        .isEqualTo(new Failed("rate limit domain must not be empty"));
    assertThat(f.call(new RlsRequest("d", List.of(), 0)))
        .isEqualTo(new Failed("rate limit descriptor list must not be empty"));
  }

  @Test
  void storeDown_failureModesPerLimit() {
    f.storeDown = true;
    // default (open) for "user"
    Decided open = f.decided("d", Descriptor.of("user", "a"));
    assertThat(open.overall()).isEqualTo(Code.OK);
    assertThat(f.decided("d", Descriptor.of("closed", "a")).overall()).isEqualTo(Code.OVER_LIMIT);
    // local: 10 / 2 replicas = 5 in process
    int ok = 0;
    for (int i = 0; i < 8; i++) {
      if (f.decided("d", Descriptor.of("local", "a")).overall() == Code.OK) {
        ok++;
      }
    }
    assertThat(ok).isEqualTo(5);
    assertThat(f.registry.counter(RlsMetrics.STORE_ERRORS).count()).isEqualTo(10);
    assertThat(f.registry.counter(RlsMetrics.STORE_FAILURE_MODE, "mode", "local").count())
        .isEqualTo(8);
    f.storeDown = false;
    assertThat(f.decided("d", Descriptor.of("local", "a")).statuses().get(0).limitRemaining())
        .isEqualTo(9);
  }

  @Test
  void storeDown_errorMode_failsTheCall() {
    RlsFixture e = new RlsFixture(YAML, "SLUICE_RLS_STRICT", "true");
    e.storeDown = true;
    assertThat(e.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0)))
        .isEqualTo(new Failed("redis: connection refused"));
  }

  @Test
  void storeAnsweringLater_sameDecisionsAsAtOnce() {
    RlsFixture now = new RlsFixture(YAML);
    RlsFixture later = new RlsFixture(YAML);
    later.async = true;
    for (int i = 0; i < 12; i++) {
      RlsDecision a = now.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0));
      RlsDecision b = later.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0));
      assertThat(b).as("call %d", i).isEqualTo(a);
    }
    later.storeDown = true;
    now.storeDown = true;
    assertThat(later.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0)))
        .isEqualTo(now.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0)));
  }

  @Test
  void storeLatency_isTimedForRoundTrips_notForTheInProcessStore() {
    RlsFixture remote = new RlsFixture(YAML);
    RlsFixture memory = new RlsFixture(YAML);
    memory.inProcess = true;
    for (int i = 0; i < 3; i++) {
      remote.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0));
      memory.call(new RlsRequest("d", List.of(Descriptor.of("user", "a")), 0));
    }
    assertThat(remote.registry.find(RlsMetrics.STORE_LATENCY).timer().count()).isEqualTo(3);
    assertThat(memory.registry.find(RlsMetrics.STORE_LATENCY).timer().count()).isZero();
  }
}
