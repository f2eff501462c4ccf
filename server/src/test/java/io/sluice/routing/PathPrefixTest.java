package io.sluice.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testing.Seeded;
import org.junit.jupiter.api.Test;

/** A route's path prefix matches exactly what {@link String#startsWith} matches. */
class PathPrefixTest {
  record Case(String path, String prefix) {}

  @Test
  void prefixedEqualsStartsWith() {
    Seeded.forAll(
        0x5EED_3302L,
        2000,
        g -> {
          String prefix = g.string("/v1abc\u00e9\u4e2d", 0, 6);
          String path =
              g.oneOf(
                  prefix,
                  prefix + g.string("/v1abc\u00e9\u4e2d", 0, 4),
                  g.string("/v1abc\u00e9\u4e2d", 0, 8));
          return new Case(path, prefix);
        },
        c ->
            assertThat(RequestResolver.prefixed(c.path(), c.prefix()))
                .as(c.toString())
                .isEqualTo(c.path().startsWith(c.prefix())));
  }
}
