package io.sluice.rls;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.rls.config.Algorithm;
import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitConfig.Entry;
import io.sluice.rls.config.RateLimitUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CacheKeysTest {
  private static final long NOW = 1_765_000_123L;

  private static LimitSpec limit(RateLimitUnit unit, long multiplier, Algorithm a, int index) {
    return new LimitSpec(
        "",
        unit,
        10,
        multiplier,
        false,
        false,
        false,
        false,
        List.of(),
        a,
        Optional.empty(),
        index,
        "tenant");
  }

  private static final LimitSpec FIRST = limit(RateLimitUnit.SECOND, 1, Algorithm.FIXED_WINDOW, 0);

  private static List<Entry> entries(String... kv) {
    List<Entry> es = new ArrayList<>();
    for (int i = 0; i < kv.length; i += 2) {
      es.add(new Entry(kv[i], kv[i + 1]));
    }
    return es;
  }

  private static List<String> values(List<Entry> es) {
    return es.stream().map(Entry::value).toList();
  }

  @Test
  void theReferenceLayoutAndTheSameStringForTheSameDescriptorAndWindow() {
    CacheKeys keys = new CacheKeys("");
    List<Entry> es = entries("tenant", "acme", "model", "gpt");
    String first = keys.key("bench", es, values(es), FIRST, NOW);
    assertThat(first).isEqualTo("bench_tenant_acme_model_gpt_" + NOW);
    // a later call with equal (not identical) strings gets the same instance: nothing built
    List<Entry> again = entries(new String("tenant"), new String("acme"), "model", "gpt");
    assertThat(keys.key(new String("bench"), again, values(again), FIRST, NOW)).isSameAs(first);
  }

  @Test
  void aNewWindowOrAnotherValueOrLimitGetsItsOwnKey() {
    CacheKeys keys = new CacheKeys("p:");
    List<Entry> es = entries("tenant", "acme");
    String now = keys.key("d", es, values(es), FIRST, NOW);
    assertThat(keys.key("d", es, values(es), FIRST, NOW + 1))
        .isEqualTo("p:d_tenant_acme_" + (NOW + 1));
    List<Entry> other = entries("tenant", "acmf");
    assertThat(keys.key("d", other, values(other), FIRST, NOW)).isEqualTo("p:d_tenant_acmf_" + NOW);
    LimitSpec second = limit(RateLimitUnit.MINUTE, 1, Algorithm.FIXED_WINDOW, 1);
    assertThat(keys.key("d", es, values(es), second, NOW))
        .isEqualTo("p:d_tenant_acme_l1w60_" + Math.floorDiv(NOW, 60) * 60);
    LimitSpec bucket = limit(RateLimitUnit.HOUR, 2, Algorithm.TOKEN_BUCKET, 0);
    assertThat(keys.key("d", es, values(es), bucket, NOW)).isEqualTo("p:d_tenant_acme_tb0w7200");
    assertThat(keys.key("e", es, values(es), FIRST, NOW)).isEqualTo("p:e_tenant_acme_" + NOW);
    assertThat(keys.key("d", es, List.of("pattern*"), FIRST, NOW))
        .isEqualTo("p:d_tenant_pattern*_" + NOW);
    assertThat(keys.key("d", es, values(es), FIRST, NOW)).isEqualTo(now);
  }

  @Test
  void descriptorsThatBuildTheSameCharactersShareTheKeyLikeTheReference() {
    CacheKeys keys = new CacheKeys("");
    List<Entry> a = entries("a_b", "c");
    List<Entry> b = entries("a", "b_c");
    String ka = keys.key("d", a, values(a), FIRST, NOW);
    assertThat(keys.key("d", b, values(b), FIRST, NOW)).isEqualTo(ka).isEqualTo("d_a_b_c_" + NOW);
    List<Entry> shorter = entries("a", "b");
    assertThat(keys.key("d", shorter, values(shorter), FIRST, NOW)).isEqualTo("d_a_b_" + NOW);
    List<Entry> longer = entries("a", "b", "c", "");
    assertThat(keys.key("d", longer, values(longer), FIRST, NOW)).isEqualTo("d_a_b_c__" + NOW);
    assertThat(keys.key("d_a", shorter, values(shorter), FIRST, NOW)).isEqualTo("d_a_a_b_" + NOW);
  }

  @Test
  void alwaysTheCharactersBuiltOnEveryCall() {
    CacheKeys keys = new CacheKeys("x");
    CacheKeys fresh = new CacheKeys("x");
    Random random = new Random(34);
    String[] words = {"", "a", "b", "_", "a_", "_b", "ab", "tenant", "acme"};
    LimitSpec[] limits = {
      FIRST,
      limit(RateLimitUnit.SECOND, 1, Algorithm.FIXED_WINDOW, 1),
      limit(RateLimitUnit.MINUTE, 3, Algorithm.FIXED_WINDOW, 0),
      limit(RateLimitUnit.SECOND, 1, Algorithm.TOKEN_BUCKET, 0),
      limit(RateLimitUnit.SECOND, 1, Algorithm.TOKEN_BUCKET, 2)
    };
    for (int i = 0; i < 200_000; i++) {
      String domain = words[random.nextInt(words.length)];
      List<Entry> es = new ArrayList<>();
      for (int n = random.nextInt(3); n >= 0; n--) {
        es.add(new Entry(words[random.nextInt(words.length)], words[random.nextInt(words.length)]));
      }
      LimitSpec l = limits[random.nextInt(limits.length)];
      long now = NOW + random.nextInt(4);
      assertThat(keys.key(domain, es, values(es), l, now))
          .isEqualTo(fresh.build(domain, es, values(es), l, now));
    }
  }
}
