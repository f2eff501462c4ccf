package io.sluice.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The {@code nativeMetadata} section: Envoy's AI metadata namespaces, read and written back. */
class NativeMetadataConfigTest {
  private static final String BASE =
      """
      pools: {p: {capacity: 100}}
      classes: {interactive: {rank: 0, reservedShare: 1.0}}
      """;

  @Test
  void absent_readsBothUnderEnvoysDefaultNamespaces() {
    NativeMetadata n = ConfigLoader.parse(BASE).section(NativeMetadataSection.SECTION);
    assertThat(n).isEqualTo(NativeMetadata.DEFAULTS);
    assertThat(n.requestInfoNamespace()).isEqualTo("envoy.ai.request_info");
    assertThat(n.usageNamespace()).isEqualTo("envoy.ai.token_usage");
  }

  @Test
  void set_readAndWrittenBackTheSame() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                nativeMetadata:
                  requestInfo: false
                  usageNamespace: acme.ai_usage
                """);
    NativeMetadata n = c.section(NativeMetadataSection.SECTION);
    assertThat(n)
        .isEqualTo(
            new NativeMetadata(
                false,
                NativeMetadata.REQUEST_INFO_NAMESPACE,
                true,
                "acme.ai_usage",
                NativeMetadata.LearnedRatio.DEFAULTS));
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(NativeMetadataSection.SECTION)).isEqualTo(n);
  }

  @Test
  void badValues_eachNamedWithItsPathAndTheValueExpected() {
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        nativeMetadata:
                          requestInfo: maybe
                          usageNamespace: "has spaces"
                          extra: 1
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e ->
                assertThat(((ConfigException) e).errors())
                    .anyMatch(m -> m.startsWith("nativeMetadata.requestInfo:"))
                    .anyMatch(
                        m ->
                            m.startsWith("nativeMetadata.usageNamespace:")
                                && m.contains("(expected: a metadata namespace"))
                    .anyMatch(m -> m.startsWith("nativeMetadata.extra")));
  }

  @Test
  void learnedBytesPerToken_readAndWrittenBack_badValuesNamed() throws Exception {
    SluiceConfig c =
        ConfigLoader.parse(
            BASE
                + """
                nativeMetadata:
                  learnedBytesPerToken: {enabled: false, warmup: 3, min: 2, max: 9, maxKeys: 10, halfLife: 5m}
                """);
    NativeMetadata.LearnedRatio l = c.section(NativeMetadataSection.SECTION).learnedBytesPerToken();
    assertThat(l)
        .isEqualTo(
            new NativeMetadata.LearnedRatio(false, 3, 2, 9, 10, java.time.Duration.ofMinutes(5)));
    SluiceConfig again =
        ConfigLoader.parse(
            new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .writeValueAsString(ConfigWriter.tree(c)));
    assertThat(again.section(NativeMetadataSection.SECTION).learnedBytesPerToken()).isEqualTo(l);
    assertThatThrownBy(
            () ->
                ConfigLoader.parse(
                    BASE
                        + """
                        nativeMetadata:
                          learnedBytesPerToken: {warmup: 0, min: 8, max: 2, halfLife: 10ms, x: 1}
                        """))
        .isInstanceOf(ConfigException.class)
        .satisfies(
            e ->
                assertThat(((ConfigException) e).errors())
                    .anyMatch(m -> m.startsWith("nativeMetadata.learnedBytesPerToken.warmup:"))
                    .anyMatch(m -> m.startsWith("nativeMetadata.learnedBytesPerToken.max:"))
                    .anyMatch(m -> m.startsWith("nativeMetadata.learnedBytesPerToken.halfLife:"))
                    .anyMatch(m -> m.startsWith("nativeMetadata.learnedBytesPerToken.x")));
  }
}
