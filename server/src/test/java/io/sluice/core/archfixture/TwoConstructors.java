package io.sluice.core.archfixture;

/**
 * A record with a compatibility constructor: breaks the one-constructor rule on purpose (test
 * sources only; see RecordRulesBiteTest).
 */
public record TwoConstructors(String name, int weight) {
  public TwoConstructors(String name) {
    this(name, 1);
  }
}
