package io.sluice.core.archfixture;

/**
 * A class with a compatibility constructor that fills in a default through {@code this(...)}:
 * breaks the constructor rule on purpose (test sources only; see ConstructorRulesTest).
 */
public final class DelegatingConstructor {
  private final String name;
  private final int weight;

  public DelegatingConstructor(String name) {
    this(name, 1);
  }

  public DelegatingConstructor(String name, int weight) {
    this.name = name;
    this.weight = weight;
  }

  @Override
  public String toString() {
    return name + weight;
  }
}
