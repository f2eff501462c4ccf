package io.sluice.core.archfixture;

/**
 * A class with one constructor and a named static factory for its default: keeps the constructor
 * rule (its constructor builds an instance of another class only).
 */
public final class FactoryForDefaults {
  private final String name;
  private final StringBuilder notes;

  public FactoryForDefaults(String name, int weight) {
    this.name = name;
    this.notes = new StringBuilder().append(weight);
  }

  public static FactoryForDefaults light(String name) {
    return new FactoryForDefaults(name, 1);
  }

  @Override
  public String toString() {
    return name + notes;
  }
}
