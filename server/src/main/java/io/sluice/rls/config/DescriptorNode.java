package io.sluice.rls.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One level of a domain's descriptor tree. Children are keyed by composite key ({@code key} or
 * {@code key_value}); wildcard children (value containing {@code *}) are also kept in file order.
 * Built once by the loader, then never modified.
 */
public final class DescriptorNode {
  private final String compositeKey;
  private final String value;
  private final boolean shareThreshold;
  private final List<String> patternParts;
  private final List<LimitSpec> limits;
  final Map<String, DescriptorNode> children = new LinkedHashMap<>();
  final List<DescriptorNode> wildcards = new ArrayList<>();
  // built by freeze() once the loader is done, before the config is published
  private ChildIndex index = ChildIndex.EMPTY;

  DescriptorNode(
      String compositeKey, String value, boolean shareThreshold, List<LimitSpec> limits) {
    this.compositeKey = compositeKey;
    this.value = value;
    this.shareThreshold = shareThreshold;
    this.limits = List.copyOf(limits);
    this.patternParts =
        compositeKey.contains("*") ? List.of(compositeKey.split("\\*", -1)) : List.of();
  }

  static DescriptorNode root() {
    return new DescriptorNode("", "", false, List.of());
  }

  public String compositeKey() {
    return compositeKey;
  }

  /** The configured value (a pattern for wildcard nodes), "" for key-only nodes. */
  public String value() {
    return value;
  }

  public boolean shareThreshold() {
    return shareThreshold;
  }

  public List<LimitSpec> limits() {
    return limits;
  }

  public Map<String, DescriptorNode> children() {
    return Collections.unmodifiableMap(children);
  }

  /**
   * Indexes the children of this node and of every node below it; called once the tree is complete,
   * before its config is published (and so before any {@link #child} lookup).
   */
  void freeze() {
    index = new ChildIndex(children);
    for (DescriptorNode c : children.values()) {
      c.freeze();
    }
  }

  /** The child with composite key {@code key + "_" + value}, or null (no string built). */
  @Nullable DescriptorNode child(String key, String value) {
    return index.get(key, value);
  }

  boolean isWildcard() {
    return !patternParts.isEmpty();
  }

  /**
   * Glob match of {@code key_value} against this node's {@code key_pattern}: each {@code *} matches
   * zero or more characters, literal parts appear in order.
   */
  boolean matches(String keyValue) {
    List<String> parts = patternParts;
    String first = parts.get(0);
    String last = parts.get(parts.size() - 1);
    if (!keyValue.startsWith(first)) {
      return false;
    }
    int pos = first.length();
    for (int i = 1; i < parts.size() - 1; i++) {
      int at = keyValue.indexOf(parts.get(i), pos);
      if (at < 0) {
        return false;
      }
      pos = at + parts.get(i).length();
    }
    return keyValue.length() - pos >= last.length() && keyValue.endsWith(last);
  }
}
