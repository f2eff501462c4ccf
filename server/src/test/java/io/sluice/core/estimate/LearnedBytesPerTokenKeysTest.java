package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/**
 * The keys a request's ratio is looked up with ({@link LearnedBytesPerToken#bytesPerToken}): the
 * last pool key and the last pool-and-model key are reused (hit: same names, any strings; miss:
 * another name makes a new one), each hashed once as a record of the two names would be; what a
 * reused key finds is the learner's cell as it is now (learned updates, evictions); and the reuse
 * keeps no client-chosen name beyond the one last asked.
 */
class LearnedBytesPerTokenKeysTest {
  private static final LearnedBytesPerToken.Settings S =
      new LearnedBytesPerToken.Settings(true, 4.0, 4, 1.5, 16, 4, 60_000);

  private long now = 1_000_000_000L;

  private void answers(LearnedBytesPerToken l, String pool, String model, int n, double ratio) {
    for (int i = 0; i < n; i++) {
      now += 1_000_000_000L;
      l.learn(pool, model, "a", Math.round(6000 * ratio), 6000, now);
    }
  }

  /** A name equal to {@code s}, as another request's header would carry it: another string. */
  private static String fresh(String s) {
    return new String(s.toCharArray());
  }

  @Test
  void hit_theSameNames_theSameKey_whateverStringsCarryThem() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    Object k = l.lookupKey(fresh("gpu"), fresh("gpt-4o"));
    assertThat(l.lookupKey(fresh("gpu"), fresh("gpt-4o"))).isSameAs(k);
    Object p = l.lookupKey(fresh("gpu"), null);
    assertThat(l.lookupKey(fresh("gpu"), null)).isSameAs(p).isNotSameAs(k);
  }

  @Test
  void miss_anotherModelOrPool_anotherKey_equalToAFreshOne() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    Object a = l.lookupKey("gpu", "gpt-4o");
    Object b = l.lookupKey("gpu", "llama");
    Object c = l.lookupKey("cpu", "llama");
    assertThat(b).isNotSameAs(a).isNotEqualTo(a);
    assertThat(c).isNotSameAs(b).isNotEqualTo(b);
    Object again = l.lookupKey("gpu", "gpt-4o");
    assertThat(again).as("the last key is replaced").isNotSameAs(a).isEqualTo(a);
    assertThat(again.hashCode())
        .as("a record's hash of (pool, model): the cache's order as before")
        .isEqualTo(a.hashCode())
        .isEqualTo(31 * "gpu".hashCode() + "gpt-4o".hashCode());
  }

  @Test
  void miss_eachModelItsOwnRatio_whenRequestsAlternate() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "gpu", "gpt-4o", 4, 6.0);
    answers(l, "gpu", "llama", 4, 3.0);
    for (int i = 0; i < 3; i++) {
      assertThat(l.bytesPerToken("gpu", fresh("gpt-4o"))).isCloseTo(6.0, within(1e-9));
      assertThat(l.bytesPerToken("gpu", fresh("llama"))).isCloseTo(3.0, within(1e-9));
      assertThat(l.bytesPerToken("cpu", fresh("llama"))).as("another pool").isEqualTo(4.0);
    }
  }

  @Test
  void aLearnedUpdate_isSeenThroughTheReusedKey() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "gpu", "gpt-4o", 3, 6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).as("not warmed: the prior").isEqualTo(4.0);
    assertThat(l.bytesPerToken("gpu", null)).isEqualTo(4.0);
    answers(l, "gpu", "gpt-4o", 1, 6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).isCloseTo(6.0, within(1e-9));
    assertThat(l.bytesPerToken("gpu", null)).isCloseTo(6.0, within(1e-9));
    answers(l, "gpu", "gpt-4o", 40, 3.0);
    double moved = l.bytesPerToken("gpu", "gpt-4o");
    assertThat(moved).as("the newer answers weigh more").isBetween(3.0, 3.5);
    assertThat(l.bytesPerToken("gpu", null)).isEqualTo(moved);
  }

  @Test
  void anEvictedKey_isNotFoundThroughTheReusedKey_thePoolsRatioThen() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S); // 4 keys
    answers(l, "gpu", "gpt-4o", 4, 6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).isCloseTo(6.0, within(1e-9));
    for (int m = 0; m < 20; m++) { // hotter models push it out; the pool's key is the hottest
      answers(l, "gpu", "m" + m, 20, 2.0);
    }
    assertThat(l.keyCount()).isLessThanOrEqualTo(4);
    assertThat(l.keys()).extracting(LearnedBytesPerToken.KeyView::model).doesNotContain("gpt-4o");
    double pool = l.bytesPerToken("gpu", null);
    assertThat(pool).isLessThan(6.0);
    assertThat(l.bytesPerToken("gpu", "gpt-4o")).as("evicted: the pool's").isEqualTo(pool);
  }

  @Test
  void bound_clientChosenModels_addNoKeys_andOnlyTheLastNameIsKept() {
    LearnedBytesPerToken l = new LearnedBytesPerToken(S);
    answers(l, "gpu", "gpt-4o", 4, 6.0);
    long held = l.keyCount();
    String longName = "x".repeat(10_000);
    for (int i = 0; i < 10_000; i++) {
      assertThat(l.bytesPerToken("gpu", i + longName)).isCloseTo(6.0, within(1e-9));
    }
    assertThat(l.keyCount()).as("a lookup adds no key").isEqualTo(held);
    assertThat(l.lookupKey("gpu", longName + "y"))
        .as("the kept key's names are cut (128 chars)")
        .isSameAs(l.lookupKey("gpu", longName + "z"));
  }
}
