/** The one result an ended async iterator answers with: readers only look at it, so it is shared. */
export const ITERATOR_ENDED: IteratorReturnResult<undefined> = Object.freeze({
  done: true,
  value: undefined,
});
