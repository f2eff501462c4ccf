package io.sluice.bench; final class Placeholder {}
