package io.sluice.config;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;

/**
 * A top-level policy section a feature brings (e.g. {@code retries}): read from its YAML node
 * (every error naming the field's path and the value expected, as {@link Node} collects them),
 * written back for {@code /config} and {@code config print-default}, and its value when the policy
 * leaves it out. The loader reads the registered sections after the built-in ones, in registration
 * order, and {@link SluiceConfig#section} hands their values out by the section's type; neither
 * {@link ConfigLoader}, {@link ConfigWriter} nor {@link SluiceConfig} names one.
 *
 * <p>Registered once, in {@code META-INF/services/io.sluice.config.ConfigSection} (one line: the
 * class, public with a public no-argument constructor; {@link ConfigSections#installed()}), so that
 * every reader of a policy (the server, {@code sluice validate}, tests) knows the section. The
 * feature module that owns it (its store port, check and listeners) reads its value with {@link
 * SluiceConfig#section}.
 *
 * @param <T> the section's value (an immutable policy record)
 */
public interface ConfigSection<T> {
  /** The top-level key ({@code retries}). */
  String name();

  /** The value when the policy has no such section. */
  T defaults();

  /** Reads the section (the node may be absent: then {@link #defaults()}'s values). */
  T read(Node n, Refs refs);

  /** The section as {@link #read} reads it, every default filled in. */
  ObjectNode write(T value);

  /**
   * The signals of the feature's own that the policy may name under {@code signals:}, beside the
   * built-in ones ({@link SluiceConfig.Signal#BUILT_IN}): say an SDK's retry counter, {@link
   * SluiceConfig.Signal#of} when a client can only hurt itself with it, {@link
   * SluiceConfig.Signal#guarded} when it must not choose it. Every key {@link #signals} and {@link
   * #signalHeaders} and {@link #signalAttributes} name is one of these or built in. None by
   * default.
   */
  default java.util.List<SluiceConfig.Signal> declaredSignals() {
    return java.util.List.of();
  }

  /**
   * The signals ({@code signals.<key>}) the feature reads from each request while {@code value} is
   * in force, e.g. {@code operationId}: the resolver reads them from their trusted sources into the
   * request ({@code Subject.signals()}); none by default. Built-in keys, or {@link
   * #declaredSignals}.
   */
  default Set<String> signals(T value) {
    return Set.of();
  }

  /**
   * Of {@link #signals}, those the feature reads only to write them into the decision record: the
   * resolver does not read them while the decision log is off (nothing would carry them). None by
   * default.
   */
  default Set<String> recordSignals(T value) {
    return Set.of();
  }

  /**
   * The signals of {@link #signals} read only when another one of them has a value, by key: the
   * signal it needs (W3C {@code tracestate} means nothing without a {@code traceparent}, so a
   * request without one reads neither). None by default.
   */
  default java.util.Map<String, String> signalsBeside() {
    return java.util.Map.of();
  }

  /**
   * The header each signal the feature reads is taken from when the policy declares no source for
   * it ({@code signals.<key>} absent), by signal key (built in or {@link #declaredSignals}); only
   * for signals a client can only hurt itself with. None by default.
   */
  default java.util.Map<String, String> signalHeaders() {
    return java.util.Map.of();
  }

  /**
   * The Envoy attribute ({@code request_attributes}, e.g. {@code source.address}) each signal the
   * feature reads is taken from when the policy declares no source for it, by signal key (built in
   * or {@link #declaredSignals}): what Envoy itself reports, which a client cannot choose. None by
   * default.
   */
  default java.util.Map<String, String> signalAttributes() {
    return java.util.Map.of();
  }

  /**
   * The names declared elsewhere in the policy that a section may refer to.
   *
   * @param routes {@code routes[].name}
   * @param pools {@code pools} keys
   * @param classes {@code classes} keys
   * @param tiers {@code tiers} keys ({@code default} included)
   * @param responsesClasses the classes a request in the Responses shape ({@code openai-responses})
   *     can have: those of the routes (and of {@code unmatched}, when it admits) whose format is
   *     {@code openai-responses} or {@code auto} (resolved by path); every class when {@code
   *     signals.class} names a source; every route's class when {@code signals.format} does
   * @param rungs the rungs' names of each class's degrade ladder ({@code
   *     classes.<name>.degrade.ladder}), by class (a class without a ladder: none)
   */
  record Refs(
      Set<String> routes,
      Set<String> pools,
      Set<String> classes,
      Set<String> tiers,
      Set<String> responsesClasses,
      java.util.Map<String, java.util.List<String>> rungs) {}
}
