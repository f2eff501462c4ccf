package io.sluice.rls.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.rls.config.RateLimitConfig.Entry;
import io.sluice.rls.config.RateLimitConfig.Match;
import io.sluice.rls.config.RateLimitConfigLoader.ConfigFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RateLimitConfigLoaderTest {
  private static RateLimitConfig load(String yaml) {
    return RateLimitConfigLoader.build(List.of(new ConfigFile("config.test.yaml", yaml)), false);
  }

  private static List<Entry> entries(String... kv) {
    List<Entry> out = new java.util.ArrayList<>();
    for (int i = 0; i < kv.length; i += 2) {
      out.add(new Entry(kv[i], kv[i + 1]));
    }
    return out;
  }

  private static String limitOf(Match m) {
    if (m.limits().isEmpty()) {
      return "none";
    }
    LimitSpec l = m.limits().get(0);
    return l.unlimited() ? "unlimited" : l.requestsPerUnit() + "/" + l.unit();
  }

  static final String BASIC =
      """
      domain: test
      descriptors:
        - key: key1
          value: value1
          descriptors:
            - key: subkey1
              rate_limit: {unit: second, requests_per_unit: 5}
        - key: key2
          rate_limit: {unit: minute, requests_per_unit: 20}
        - key: key2
          value: value2
          rate_limit: {unit: minute, requests_per_unit: 30}
        - key: key2
          value: allowed
        - key: key3
          rate_limit: {unit: Hour, requests_per_unit: 10}
          descriptors:
            - key: sub
              rate_limit: {unit: day, requests_per_unit: 3}
        - key: region
          value: eu
        - key: region
          descriptors:
            - key: zone
              rate_limit: {unit: second, requests_per_unit: 7}
        - key: wild
          value: foo*
          rate_limit: {unit: second, requests_per_unit: 1}
        - key: wild
          value: f*
          rate_limit: {unit: second, requests_per_unit: 2}
        - key: wild
          value: a*b*c
          rate_limit: {unit: second, requests_per_unit: 3}
        - key: unl
          rate_limit: {unlimited: true}
        - key: week
          rate_limit: {unit: WEEK, requests_per_unit: 1}
      """;

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
    "key1=value1;subkey1=x, 5/SECOND",
    "key1=value1, none",
    "key1=other;subkey1=x, none",
    "key2=value2, 30/MINUTE",
    "key2=zzz, 20/MINUTE",
    "key2=allowed, none",
    "key2=value2;extra=1, none",
    "key3=a, 10/HOUR",
    "key3=a;sub=b, 3/DAY",
    "key3=a;sub=b;more=c, none",
    "region=eu;zone=z, none",
    "region=us;zone=z, 7/SECOND",
    "wild=foobar, 1/SECOND",
    "wild=fun, 2/SECOND",
    "wild=axxbyyc, 3/SECOND",
    "wild=abcd, none",
    "unl=x, unlimited",
    "week=x, 1/WEEK",
    "nokey=x, none",
  })
  void match_table(String request, String expected) {
    RateLimitConfig config = load(BASIC);
    List<Entry> es = new java.util.ArrayList<>();
    for (String kv : request.split(";")) {
      String[] p = kv.split("=", 2);
      es.add(new Entry(p[0], p[1]));
    }
    assertThat(limitOf(config.match("test", es))).isEqualTo(expected);
  }

  @Test
  void match_unknownDomain_none() {
    assertThat(load(BASIC).match("other", entries("key2", "v")).limits()).isEmpty();
  }

  @Test
  void match_statKeys_followTheConfigPath() {
    RateLimitConfig config = load(BASIC);
    assertThat(
            config
                .match("test", entries("key1", "value1", "subkey1", "x"))
                .limits()
                .get(0)
                .statKey())
        .isEqualTo("key1_value1.subkey1");
    assertThat(config.match("test", entries("wild", "foobar")).limits().get(0).statKey())
        .isEqualTo("wild_foo*");
  }

  @Test
  void match_detailedMetric_appendsTheValue() {
    RateLimitConfig config =
        load(
            """
            domain: d
            descriptors:
              - key: user
                detailed_metric: true
                rate_limit: {unit: second, requests_per_unit: 1}
            """);
    assertThat(config.match("d", entries("user", "alice")).limits().get(0).statKey())
        .isEqualTo("user_alice");
  }

  @Test
  void match_shareThreshold_usesThePatternInTheCacheKey() {
    RateLimitConfig config =
        load(
            """
            domain: d
            descriptors:
              - key: path
                value: /api/*
                share_threshold: true
                rate_limit: {unit: second, requests_per_unit: 1}
              - key: other
                value: x*
                rate_limit: {unit: second, requests_per_unit: 1}
            """);
    assertThat(config.match("d", entries("path", "/api/a")).cacheValues())
        .containsExactly("/api/*");
    assertThat(config.match("d", entries("other", "xyz")).cacheValues()).containsExactly("xyz");
  }

  @Test
  void load_extensions_rateLimitsListMultiplierAlgorithm() {
    RateLimitConfig config =
        load(
            """
            domain: d
            descriptors:
              - key: tenant
                rate_limits:
                  - {name: burst, unit: second, requests_per_unit: 10}
                  - {name: sustained, unit: minute, unit_multiplier: 5, requests_per_unit: 1000}
                  - {unit: hour, requests_per_unit: 50, algorithm: token_bucket, failure_mode: local}
            """);
    List<LimitSpec> limits = config.match("d", entries("tenant", "t1")).limits();
    assertThat(limits).extracting(LimitSpec::name).containsExactly("burst", "sustained", "");
    assertThat(limits.get(1).windowSeconds()).isEqualTo(300);
    assertThat(limits.get(2).algorithm()).isEqualTo(Algorithm.TOKEN_BUCKET);
    assertThat(limits.get(2).failureMode()).contains(FailureMode.LOCAL);
    assertThat(limits.get(0).referenceKeyLayout()).isTrue();
    assertThat(limits.get(1).referenceKeyLayout()).isFalse();
  }

  @ParameterizedTest(name = "{1}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          domain: d\\ndescriptors:\\n  - key: k\\n    ratelimit: {unit: second}                        | config.test.yaml: config error, unknown key 'ratelimit'
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {unit: second, requestsperunit: 1}   | config.test.yaml: config error, unknown key 'requestsperunit'
          domain: d\\ndescriptors:\\n  - foo                                                         | config.test.yaml: config error, yaml file contains list of type other than map: foo
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {unit: second, requests_per_unit: 1.5} | config.test.yaml: error checking config
          descriptors: []                                                                            | config.test.yaml: config file cannot have empty domain
          domain: d\\ndescriptors:\\n  - value: v                                                    | config.test.yaml: descriptor has empty key
          domain: d\\ndescriptors:\\n  - key: k\\n  - key: k                                         | config.test.yaml: duplicate descriptor composite key 'd.k'
          domain: d\\ndescriptors:\\n  - key: a\\n    descriptors:\\n      - {key: b, value: c}\\n      - {key: b, value: c} | config.test.yaml: duplicate descriptor composite key 'd.a.b_c'
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {unlimited: true, unit: second}   | config.test.yaml: should not specify rate limit unit when unlimited
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {unit: fortnight}                | config.test.yaml: invalid rate limit unit 'fortnight'
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {requests_per_unit: 1}           | config.test.yaml: invalid rate limit unit ''
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {unit: second, replaces: [{name: ''}]} | config.test.yaml: should not have an empty replaces entry
          domain: d\\ndescriptors:\\n  - key: k\\n    rate_limit: {name: a, unit: second, replaces: [{name: a}]} | config.test.yaml: replaces should not contain name of same descriptor
          domain: d\\ndescriptors:\\n  - key: k\\n    value: v\\n    share_threshold: true         | config.test.yaml: share_threshold can only be used with wildcard values (containing '*'), but found key 'd.k_v'
          """)
  void load_invalid_rejectedWithReferenceText(String yaml, String error) {
    assertThatThrownBy(() -> load(yaml.replace("\\n", "\n")))
        .isInstanceOf(RateLimitConfigException.class)
        .hasMessage(error);
  }

  @Test
  void load_brokenYaml_errorLoadingConfigFile() {
    assertThatThrownBy(() -> load("domain: [unclosed"))
        .hasMessageStartingWith("config.test.yaml: error loading config file: ");
  }

  @Test
  void load_sameDomainTwice_rejectedUnlessMerging() {
    List<ConfigFile> files =
        List.of(
            new ConfigFile("a.yaml", "domain: d\ndescriptors:\n  - key: a\n"),
            new ConfigFile("b.yaml", "domain: d\ndescriptors:\n  - key: b\n"));
    assertThatThrownBy(() -> RateLimitConfigLoader.build(files, false))
        .hasMessage("b.yaml: duplicate domain 'd' in config file");
    RateLimitConfig merged = RateLimitConfigLoader.build(files, true);
    assertThat(merged.domain("d").children()).containsOnlyKeys("a", "b");
    List<ConfigFile> clash =
        List.of(files.get(0), new ConfigFile("c.yaml", "domain: d\ndescriptors:\n  - key: a\n"));
    assertThatThrownBy(() -> RateLimitConfigLoader.build(clash, true))
        .hasMessage("c.yaml: duplicate descriptor composite key 'd.a'");
  }

  @Test
  void readDirectory_keysAndFilters(@TempDir Path root) throws IOException {
    RlsSettings s =
        RlsSettings.fromEnv(
            Map.of(
                "RUNTIME_ROOT", root.toString(),
                "RUNTIME_SUBDIRECTORY", "ratelimit",
                "RUNTIME_IGNOREDOTFILES", "true"));
    Path dir = s.configDirectory();
    assertThat(dir).isEqualTo(root.resolve("ratelimit").resolve("config"));
    Files.createDirectories(dir.resolve("sub"));
    Files.createDirectories(dir.resolve("..data"));
    Files.writeString(dir.resolve("basic.yaml"), "domain: a\n");
    Files.writeString(dir.resolve("sub/more.yaml"), "domain: b\n");
    Files.writeString(dir.resolve(".hidden.yaml"), "domain: c\n");
    Files.writeString(dir.resolve("..data/basic.yaml"), "domain: a\n");
    RateLimitConfig config =
        RateLimitConfigLoader.loadDirectory(
            dir, s.files().ignoreDotFiles(), s.files().mergeDomainConfig());
    assertThat(config.fileKeys()).containsExactly("basic.yaml", "sub.more.yaml");
    assertThat(config.domains()).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void load_valuesOfOtherScalarTypes_becomeStrings() {
    RateLimitConfig config =
        load(
            "domain: d\ndescriptors:\n  - key: code\n    value: 404\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
    assertThat(config.match("d", entries("code", "404")).limits()).hasSize(1);
  }
}
