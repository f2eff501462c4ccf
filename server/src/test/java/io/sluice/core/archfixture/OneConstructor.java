package io.sluice.core.archfixture;

/** A record with its canonical constructor only: keeps the one-constructor rule. */
public record OneConstructor(String name, int weight) {
  public OneConstructor {
    if (weight < 0) {
      throw new IllegalArgumentException("weight: " + weight + " (expected: >= 0)");
    }
  }
}
