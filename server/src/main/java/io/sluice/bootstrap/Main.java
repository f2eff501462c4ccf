package io.sluice.bootstrap;

/** Entry point placeholder. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.out.println("sluice");
  }
}
