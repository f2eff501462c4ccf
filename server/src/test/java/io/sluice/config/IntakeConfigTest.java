package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.intake.IntakePolicy;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code intake} section and the signals it reads. */
class IntakeConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}, batch: {rank: 1, borrow: true}}
      routes: [{name: responses, match: {pathPrefix: /v1/responses}, pool: p, class: c}]
      """;

  @Test
  void absent_off_andReadsNoSignal() {
    SluiceConfig c = ConfigLoader.parse(BASE);
    assertThat(c.section(IntakeSection.SECTION)).isEqualTo(IntakePolicy.DEFAULTS);
    assertThat(c.section(IntakeSection.SECTION).enabled()).isFalse();
    assertThat(IntakeSection.SECTION.signals(IntakePolicy.DEFAULTS)).isEmpty();
  }

  @Test
  void section_isRead_andWrittenBackTheSame() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                intake:
                  enabled: true
                  classes: [batch]
                  routes: [responses]
                  statusPath: /v1/responses/
                  freshness: 30m
                  maxJobsPerTenant: 50
                  maxWorkPerTenant: 400000
                  maxRequestBytes: 65536
                  retention: 2h
                  maxJobs: 5000
                """);
    IntakePolicy p = c.section(IntakeSection.SECTION);
    assertThat(p.enabled()).isTrue();
    assertThat(p.classes()).containsExactly("batch");
    assertThat(p.routes()).containsExactly("responses");
    assertThat(p.covers("batch", "other")).isTrue();
    assertThat(p.covers("c", "responses")).isTrue();
    assertThat(p.covers("c", "chat")).isFalse();
    assertThat(p.freshness()).isEqualTo(Duration.ofMinutes(30));
    assertThat(p.maxJobsPerTenant()).isEqualTo(50);
    assertThat(p.maxWorkPerTenant()).isEqualTo(400_000);
    assertThat(p.maxRequestBytes()).isEqualTo(65_536);
    assertThat(p.retention()).isEqualTo(Duration.ofHours(2));
    assertThat(p.maxJobs()).isEqualTo(5000);
    // the operation routes are told by Envoy's pseudo-headers unless the policy says otherwise
    assertThat(c.signals().get(IntakeSection.PATH)).containsExactly(new Source.Header(":path"));
    assertThat(c.signals().get(IntakeSection.METHOD)).containsExactly(new Source.Header(":method"));
    assertThat(c.signals().get(IntakeSection.DISPATCH))
        .containsExactly(new Source.Header("x-sluice-dispatch"));
    assertThat(IntakeSection.SECTION.signals(p))
        .isEqualTo(Set.of("intakePath", "intakeMethod", "intakeDispatch"));
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(IntakeSection.SECTION)).isEqualTo(p);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        intake:
                          enabled: true
                          classes: [nope]
                          routes: [gone]
                          statusPath: v1/responses
                          freshness: 0.5s
                          retention: 40d
                          maxJobsPerTenant: 0
                          extra: 1
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e -> {
              List<String> errors = ((ConfigException) e).errors();
              assertThat(errors)
                  .contains(
                      "intake.classes[0]: nope (expected: the name of a class in classes)",
                      "intake.routes[0]: gone (expected: the name of a route in routes)",
                      "intake.statusPath: v1/responses (expected: a path that starts and ends"
                          + " with /)",
                      "intake.freshness: 500ms (expected: a duration in 1s..168h)",
                      "intake.maxJobsPerTenant: 0 (expected: an integer in 1..10000000)");
              assertThat(errors).anyMatch(m -> m.startsWith("intake.retention"));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.extra"));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.classes: empty"));
            });
  }

  @Test
  void dispatch_isRead_writtenBackByVariableName_andItsBadValuesNamed() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                intake:
                  enabled: true
                  classes: [batch]
                  maxResultBytes: 1048576
                  dispatch:
                    url: http://127.0.0.1:10001
                    markerKeyEnv: MY_SECRET
                    headers: {x-tenant-id: tenant, X-Sluice-Class: class}
                    timeout: 2m
                    lease: 5m
                    maxInFlight: 8
                """);
    IntakePolicy p = c.section(IntakeSection.SECTION);
    assertThat(p.maxResultBytes()).isEqualTo(1 << 20);
    assertThat(p.dispatch().enabled()).isTrue();
    assertThat(p.dispatch().url()).isEqualTo("http://127.0.0.1:10001");
    assertThat(p.dispatch().headers())
        .containsExactlyInAnyOrderEntriesOf(
            java.util.Map.of("x-tenant-id", "tenant", "x-sluice-class", "class"));
    assertThat(p.dispatch().lease()).isEqualTo(Duration.ofMinutes(5));
    assertThat(p.dispatch().maxInFlight()).isEqualTo(8);
    String written =
        new com.fasterxml.jackson.databind.ObjectMapper(
                new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
            .writeValueAsString(ConfigWriter.tree(c));
    assertThat(written).contains("MY_SECRET");
    assertThat(ConfigLoader.parse(written).section(IntakeSection.SECTION)).isEqualTo(p);
    assertThat(IntakePolicy.DEFAULTS.dispatch().enabled()).isFalse();

    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        intake:
                          enabled: true
                          classes: [batch]
                          dispatch:
                            url: http://llm.example.com:80
                            markerKeyEnv: "not a name"
                            headers: {host: tenant, x-a: nobody}
                            timeout: 5m
                            lease: 1m
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e -> {
              List<String> errors = ((ConfigException) e).errors();
              assertThat(errors).anyMatch(m -> m.startsWith("intake.dispatch.url: "));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.dispatch.markerKeyEnv: "));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.dispatch.headers.host: "));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.dispatch.headers.x-a: "));
              assertThat(errors).anyMatch(m -> m.startsWith("intake.dispatch.lease: "));
            });
  }

  private static final String LATE =
      """
      pools: {p: {capacity: 100}}
      classes: {c: {rank: 0}, batch: {rank: 1, borrow: true}}
      routes:
        - {name: chat, match: {pathPrefix: /v1/chat/completions}, pool: p, class: batch, format: openai-chat}
      unmatched: {action: reject}
      %s
      intake: {enabled: true, whenLate: {batch: accept}}
      """;

  /**
   * A late request is answered with a Responses object: only a Responses client can poll it. (An
   * admitting {@code unmatched} with format {@code auto} serves its class to Responses paths too.)
   */
  @Test
  void whenLateAccept_onAClassNoResponsesRouteServes_isAnErrorNamingItsPath() {
    assertThatThrownBy(() -> ConfigLoader.parse(LATE.formatted("")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining(
            "intake.whenLate.batch: accept, but no route serves class batch in the Responses shape"
                + " (expected: refuse, or a route with class: batch and format: openai-responses or"
                + " auto;");
    // refuse stays allowed: nothing is answered with an id
    assertThat(
            ConfigLoader.parse(LATE.formatted("").replace("batch: accept", "batch: refuse"))
                .section(IntakeSection.SECTION)
                .acceptsLate("batch"))
        .isFalse();
  }

  @Test
  void whenLateAccept_servedOnAResponsesOrAutoRoute_orFormatSignal_isRead() {
    String responses =
        "  - {name: r, match: {pathPrefix: /v1/responses}, pool: p, class: batch,"
            + " format: openai-responses}";
    String auto = "  - {name: r, match: {pathPrefix: /v1/}, pool: p, class: batch, format: auto}";
    for (String routes : List.of(responses, auto)) {
      SluiceConfig c =
          ConfigLoader.parse(LATE.formatted("").replace("routes:\n", "routes:\n" + routes + "\n"));
      assertThat(c.section(IntakeSection.SECTION).acceptsLate("batch")).as(routes).isTrue();
    }
    // a trusted format signal may make any route's request a Responses one
    SluiceConfig signalled =
        ConfigLoader.parse(LATE.formatted("signals: {format: [{metadata: x-sluice-format}]}"));
    assertThat(signalled.section(IntakeSection.SECTION).acceptsLate("batch")).isTrue();
    // a Responses route of another class does not serve batch, unless a class signal may pick it
    String other =
        "  - {name: r, match: {pathPrefix: /v1/responses}, pool: p, class: c,"
            + " format: openai-responses}";
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    LATE.formatted("").replace("routes:\n", "routes:\n" + other + "\n")))
        .hasMessageContaining("intake.whenLate.batch: accept, but no route serves class batch");
    assertThat(
            ConfigLoader.parse(
                    LATE.formatted("signals: {class: [{metadata: x-sluice-class}]}")
                        .replace("routes:\n", "routes:\n" + other + "\n"))
                .section(IntakeSection.SECTION)
                .acceptsLate("batch"))
        .isTrue();
  }
}
