package io.sluice.rls.archfixture;

/** Breaks the only-bootstrap-names-a-store rule on purpose (test sources only). */
public final class NamesAStore {
  Object store() {
    return io.sluice.store.memory.InMemoryStore.class;
  }
}
