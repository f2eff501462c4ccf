package io.sluice.rls.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ChildIndex} answers exactly as {@code children.get(key + "_" + value)}: composite keys
 * that split differently ({@code a_b} + {@code c} against {@code a} + {@code b_c}), key-only and
 * wildcard children, empty parts, non-Latin-1 characters, and random strings.
 */
class ChildIndexTest {
  private static final String[] PARTS = {
    "", "a", "b", "a_b", "b_c", "_", "__", "x*", "é", "日本", "generic_key", "remote_address"
  };

  @Test
  void compositeHash_isTheHashOfTheConcatenation() {
    Random random = new Random(34); // fixed seed
    for (int i = 0; i < 20_000; i++) {
      String key = random(random);
      String value = random(random);
      assertThat(ChildIndex.compositeHash(key, value))
          .as("%s / %s", key, value)
          .isEqualTo((key + "_" + value).hashCode());
    }
  }

  @Test
  void get_sameAsTheMapLookupOfTheConcatenation() {
    Map<String, DescriptorNode> children = new LinkedHashMap<>();
    for (String k : List.of("a_b_c", "a", "a_b", "tenant_acme", "x_y*", "k_", "_v", "é_日本", "_")) {
      children.put(k, new DescriptorNode(k, "", false, List.of()));
    }
    ChildIndex index = new ChildIndex(children);
    for (String key : PARTS) {
      for (String value : PARTS) {
        assertThat(index.get(key, value))
            .as("%s / %s", key, value)
            .isSameAs(children.get(key + "_" + value));
      }
    }
    assertThat(index.get("a", "b_c")).isSameAs(children.get("a_b_c")); // either split finds it
    assertThat(index.get("a_b", "c")).isSameAs(children.get("a_b_c"));
    assertThat(index.get("tenant", "acme")).isSameAs(children.get("tenant_acme"));
    assertThat(index.get("tenant", "acm")).isNull();
  }

  @Test
  void get_randomTrees_sameAsTheMapLookup() {
    Random random = new Random(3434); // fixed seed
    for (int round = 0; round < 200; round++) {
      Map<String, DescriptorNode> children = new LinkedHashMap<>();
      int n = random.nextInt(40);
      for (int i = 0; i < n; i++) {
        String k = random(random) + (random.nextBoolean() ? "_" + random(random) : "");
        children.put(k, new DescriptorNode(k, "", false, List.of()));
      }
      ChildIndex index = new ChildIndex(children);
      for (int i = 0; i < 200; i++) {
        String key = random(random);
        String value = random(random);
        assertThat(index.get(key, value)).isSameAs(children.get(key + "_" + value));
      }
      for (String k : children.keySet()) {
        int at = k.indexOf('_');
        if (at >= 0) {
          assertThat(index.get(k.substring(0, at), k.substring(at + 1))).isSameAs(children.get(k));
        }
      }
    }
  }

  @Test
  void get_emptyIndex_null() {
    assertThat(ChildIndex.EMPTY.get("a", "b")).isNull();
    assertThat(ChildIndex.EMPTY.get("", "")).isNull();
  }

  /** Short strings over a small alphabet (with '_'), so that collisions and splits happen. */
  private static String random(Random random) {
    StringBuilder b = new StringBuilder();
    int n = random.nextInt(5);
    for (int i = 0; i < n; i++) {
      b.append("ab_é日".charAt(random.nextInt(5)));
    }
    return b.toString();
  }
}
