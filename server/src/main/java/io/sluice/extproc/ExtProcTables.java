package io.sluice.extproc;

import io.sluice.config.LlmdSection;
import io.sluice.config.NativeMetadata;
import io.sluice.config.NativeMetadataSection;
import io.sluice.observability.NativeMetadataMetrics;
import io.sluice.routing.RequestResolver;
import java.util.LinkedHashSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The ext_proc adapter's lookup tables for one config, built with the runtime snapshot that holds
 * them ({@link AdmissionRuntime}): the header index of the config's signals, the gRPC metadata keys
 * they read, and the encoded dynamic-metadata entries of its bounded fields. A reload builds a new
 * snapshot with new tables; nothing is cached process-wide, so two servers in one JVM (tests, the
 * warm-up's isolated runtime) never share or evict each other's entries.
 */
public final class ExtProcTables {
  private final EnvoySignals.HeaderIndex headerIndex;
  private final InitialMetadata metadataKeys;
  private final AnswerEncoder.Entries answerEntries = new AnswerEncoder.Entries();
  // the config sections and feature meters a request reads, looked up once per snapshot (racy
  // but benign: every thread that finds it unset builds the same immutable value)
  private @Nullable Held held;

  /** What a request reads from the snapshot's sections and the process's feature meters. */
  record Held(
      NativeMetadata nativeMetadata, NativeMetadataMetrics nativeMeters, boolean droppedReason) {}

  public ExtProcTables(RequestResolver resolver) {
    Set<String> names = new LinkedHashSet<>(resolver.headerNames());
    names.add("content-length");
    names.add(":path");
    names.add(":method");
    names.add("content-type");
    this.headerIndex = new EnvoySignals.HeaderIndex(names);
    this.metadataKeys = new InitialMetadata(resolver.metadataNames());
  }

  EnvoySignals.HeaderIndex headerIndex() {
    return headerIndex;
  }

  InitialMetadata metadataKeys() {
    return metadataKeys;
  }

  AnswerEncoder.Entries answerEntries() {
    return answerEntries;
  }

  /** {@code rt}'s sections and meters that a request reads, found once (rt holds these tables). */
  Held held(AdmissionRuntime rt) {
    Held h = held;
    if (h == null) {
      h =
          new Held(
              rt.config().section(NativeMetadataSection.SECTION),
              rt.metrics().part(NativeMetadataMetrics.class, NativeMetadataMetrics::new),
              rt.config().section(LlmdSection.SECTION).droppedReasonHeader());
      held = h;
    }
    return h;
  }
}
