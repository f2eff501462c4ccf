package io.sluice.core.share;

/** Work units and request slots (a class's load, or part of a share). */
public record Load(long work, int requests) {}
