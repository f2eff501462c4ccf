package io.sluice.config;

import io.sluice.core.estimate.OutputReserves;
import java.time.Duration;
import java.util.Set;

/** The {@code estimation} section, with its {@code learnedReserve} (docs/estimation.md). */
final class EstimationSection {
  private EstimationSection() {}

  static SluiceConfig.Estimation read(Node e) {
    e.only(
        Set.of(
            "bytesPerToken",
            "imageTokens",
            "attachmentTokens",
            "toolDefinitionOverheadTokens",
            "perMessageOverheadTokens",
            "replyPrimingTokens",
            "maxJsonDepth",
            "maxTokenizeChars",
            "tokenCacheChars",
            "tokenCacheMinChars",
            "defaultInputTokens",
            "learnedReserve"));
    Node lr =
        e.get("learnedReserve")
            .only(
                Set.of(
                    "enabled",
                    "warmup",
                    "halfLife",
                    "maxKeys",
                    "tenantKeys",
                    "confidence",
                    "poolPrior",
                    "shareInterval",
                    "shareWindow"));
    OutputReserves.Settings d = OutputReserves.Settings.DEFAULTS;
    long shareInterval =
        lr.get("shareInterval").duration(Duration.ofMillis(d.shareIntervalMillis())).toMillis();
    if (shareInterval < 100 || shareInterval > 600_000) {
      lr.get("shareInterval")
          .invalid(
              ConfigWriter.duration(Duration.ofMillis(shareInterval)), "a duration in 100ms..10m");
      shareInterval = d.shareIntervalMillis();
    }
    long shareWindow =
        lr.get("shareWindow").duration(Duration.ofMillis(d.shareWindowMillis())).toMillis();
    if (shareWindow < shareInterval || shareWindow > 7 * 86_400_000L) {
      lr.get("shareWindow")
          .invalid(
              ConfigWriter.duration(Duration.ofMillis(shareWindow)),
              "a duration in estimation.learnedReserve.shareInterval ("
                  + ConfigWriter.duration(Duration.ofMillis(shareInterval))
                  + ")..168h");
      shareWindow = Math.max(shareInterval, d.shareWindowMillis());
    }
    OutputReserves.Settings learned =
        OutputReserves.Settings.builder()
            .enabled(lr.get("enabled").bool(d.enabled()))
            .warmup(lr.get("warmup").intValue(d.warmup(), 1, 1_000_000))
            .halfLife(lr.get("halfLife").intValue(d.halfLife(), 1, 10_000_000))
            .maxKeys(lr.get("maxKeys").intValue(d.maxKeys(), 1, 1_000_000))
            .tenantKeys(lr.get("tenantKeys").bool(d.tenantKeys()))
            .confidence(lr.get("confidence").doubleValue(d.confidence(), 0.5, 0.999))
            .poolPrior(lr.get("poolPrior").bool(d.poolPrior()))
            .shareIntervalMillis(shareInterval)
            .shareWindowMillis(shareWindow)
            .build();
    SluiceConfig.Estimation de = SluiceConfig.Estimation.DEFAULTS;
    return new SluiceConfig.Estimation(
        e.get("bytesPerToken").doubleValue(de.bytesPerToken(), 0.5, 64),
        e.get("imageTokens").longValue(de.imageTokens(), 0, 1_000_000),
        e.get("attachmentTokens").longValue(de.attachmentTokens(), 0, 1_000_000),
        e.get("toolDefinitionOverheadTokens")
            .longValue(de.toolDefinitionOverheadTokens(), 0, 100_000),
        e.get("perMessageOverheadTokens").longValue(de.perMessageOverheadTokens(), 0, 10_000),
        e.get("replyPrimingTokens").longValue(de.replyPrimingTokens(), 0, 10_000),
        e.get("maxJsonDepth").intValue(de.maxJsonDepth(), 1, 512),
        e.get("maxTokenizeChars").longValue(de.maxTokenizeChars(), 0, 1L << 30),
        e.get("tokenCacheChars").longValue(de.tokenCacheChars(), 0, 1L << 32),
        e.get("tokenCacheMinChars").intValue(de.tokenCacheMinChars(), 0, 1 << 20),
        e.get("defaultInputTokens").longValue(de.defaultInputTokens(), 1, 10_000_000),
        learned);
  }
}
