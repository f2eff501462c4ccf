package io.sluice.core.retry;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Property (seeded): no two distinct (tenant, operation) pairs map to one retry key, and no key of
 * one kind (claim, seen, refusal, budget) is a key of another, whatever separators, escapes,
 * hash-like prefixes and lengths the client's ids hold.
 */
class RetryKeysPropertyTest {
  private static final String[] PIECES = {
    "",
    ":",
    "%",
    "%3A",
    "%25",
    "h",
    "h:",
    "org",
    "team",
    "K",
    "t:",
    "o:",
    "*",
    "{",
    "}",
    "a",
    "\u00e9",
    "_",
    "::",
    "%%",
    "retry:op:",
    "0123abcdef"
  };

  static LongStream seeds() {
    return LongStream.range(1, 11);
  }

  private static String id(Random r) {
    StringBuilder b = new StringBuilder();
    if (r.nextInt(20) == 0) {
      b.append("x".repeat(RetryKeys.MAX_ID_CHARS - 2 + r.nextInt(4)));
    }
    int n = r.nextInt(5);
    for (int i = 0; i < n; i++) {
      b.append(PIECES[r.nextInt(PIECES.length)]);
    }
    return b.toString();
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void distinctTenantOperationPairs_neverShareAKey(long seed) {
    Random r = new Random(seed);
    Map<String, String> owner = new HashMap<>();
    for (int i = 0; i < 20_000; i++) {
      String tenant = id(r);
      String op = id(r);
      String pair = tenant + "\u0000" + op;
      claim(owner, RetryKeys.operation("sluice_", "gpu", tenant, op), "op " + pair);
      claim(owner, RetryKeys.seen("sluice_", "gpu", tenant, op), "seen " + pair);
      claim(owner, RetryKeys.refusal("sluice_", "gpu", tenant, op), "refused " + pair);
      claim(owner, RetryKeys.refusal("sluice_", "gpu", tenant, null), "refused " + tenant);
      claim(owner, RetryKeys.budget("sluice_", "gpu", tenant), "budget " + tenant);
    }
    claim(owner, RetryKeys.budget("sluice_", "gpu", null), "budget of the pool");
  }

  /**
   * The same with the anonymous tenant's clients beside the tenants: no (client, operation) of the
   * anonymous tenant shares a key with a (tenant, operation), including a tenant named like the
   * client's part ({@code anonymous%40...}) or {@code anonymous} itself, nor with another client's.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anonymousClients_neverShareAKeyWithATenantOrAnotherClient(long seed) {
    Random r = new Random(seed);
    Map<String, String> owner = new HashMap<>();
    String[] lookalikes = {"anonymous", "anonymous%40", "anonymous%2540", "anonymous@", "%40"};
    for (int i = 0; i < 20_000; i++) {
      String op = id(r);
      String tenant = r.nextInt(4) == 0 ? lookalikes[r.nextInt(lookalikes.length)] + id(r) : id(r);
      String client = r.nextBoolean() ? id(r) : "203.0.113." + r.nextInt(4) + id(r);
      keys(owner, tenant, null, op);
      keys(owner, "anonymous", client, op);
    }
    claim(owner, RetryKeys.budget("sluice_", "gpu", null), "budget of the pool");
  }

  private static void keys(Map<String, String> owner, String tenant, String client, String op) {
    String who = client == null ? "tenant " + tenant : "client " + client;
    String pair = who + "\u0000" + op;
    claim(owner, RetryKeys.operation("sluice_", "gpu", tenant, client, op), "op " + pair);
    claim(owner, RetryKeys.seen("sluice_", "gpu", tenant, client, op), "seen " + pair);
    claim(owner, RetryKeys.refusal("sluice_", "gpu", tenant, client, op), "refused " + pair);
    claim(owner, RetryKeys.refusal("sluice_", "gpu", tenant, client, null), "refused " + who);
    claim(owner, RetryKeys.budget("sluice_", "gpu", tenant, client), "budget " + who);
  }

  private static void claim(Map<String, String> owner, String key, String who) {
    String before = owner.putIfAbsent(key, who);
    assertThat(before == null || before.equals(who))
        .as("[%s] and [%s] share the key %s", before, who, key)
        .isTrue();
  }

  @Test
  void orgTeamK_isNotOrgTeamK_andSimpleNamesStayReadable() {
    assertThat(RetryKeys.operation("sluice_", "gpu", "org", "team:K"))
        .isEqualTo("sluice_{gpu}:retry:op:org:team%3AK")
        .isNotEqualTo(RetryKeys.operation("sluice_", "gpu", "org:team", "K"));
    assertThat(RetryKeys.operation("sluice_", "gpu", "acme", "op-1"))
        .isEqualTo("sluice_{gpu}:retry:op:acme:op-1");
  }
}
