import type { ContentPart, GenerationRequest, InputItem } from '../../../spec/generation-request.js';
import { joinJsonText, splitJsonText, type TextPiece } from './json-text-pieces.js';

/**
 * The prompt side of a request as a flat list of texts to scan: the instructions, the text parts of
 * every message (system, developer, user, assistant turns of the history), function-call arguments
 * and function-call outputs. Images, files, audio, tool definitions and sampling fields are never
 * read. `rebuild` writes changed texts back, copying only the objects on the path to a change.
 */
export interface PromptSegment {
  text: string;
  /** User messages and function-call outputs: what `scan_scope: 'user_only'` reads. */
  userSupplied: boolean;
  /** Text between JSON string literals: a label written here must itself be a JSON string. */
  jsonStructure: boolean;
  /** Where the text came from, for `rebuild`. */
  origin: { item: number; part: number };
  /** Texts of one field share a group (the literals of one JSON document): NLP parses them together. */
  group: number;
}

/** `item` of the instructions; message parts and JSON pieces use `part`. */
const INSTRUCTIONS = -1;

/**
 * One field of the prompt rewritten: the instructions (`item` -1; `part` the section, when they are
 * kept as sections), a message's text part (`part`), or a function call's arguments or output
 * (`part` -1), with its whole new text.
 */
export interface PromptEdit {
  item: number;
  part: number;
  text: string;
}

export interface PromptText {
  segments: PromptSegment[];
  /** The fields that the changed segment texts (by segment index) rewrite, each once. */
  edits(changed: ReadonlyMap<number, string>): PromptEdit[];
  rebuild(changed: ReadonlyMap<number, string>): GenerationRequest;
}

export function promptText(request: GenerationRequest): PromptText {
  const segments: PromptSegment[] = [];
  const pieces = new Map<number, TextPiece[]>();
  let group = -1;
  const push = (text: string, userSupplied: boolean, item: number, part: number, jsonStructure = false) =>
    segments.push({ text, userSupplied, jsonStructure, origin: { item, part }, group });

  group += 1;
  // Instructions kept as sections (a cache breakpoint on one of them) are scanned section by
  // section, so that an edit reaches the sections the upstream is sent, and their text joined.
  if (request.instructionSections) {
    request.instructionSections.forEach((section, index) => {
      if (section.text) push(section.text, false, INSTRUCTIONS, index);
    });
  } else if (request.instructions) push(request.instructions, false, INSTRUCTIONS, 0);
  request.input.forEach((item, index) => {
    if (item.type === 'message') {
      item.content.forEach((part, partIndex) => {
        group += 1;
        if (part.type === 'text' && part.text) push(part.text, item.role === 'user', index, partIndex);
      });
      return;
    }
    const raw = item.type === 'function-call' ? item.arguments : item.output;
    if (!raw) return;
    const split = splitJsonText(raw);
    pieces.set(index, split);
    group += 1;
    split.forEach((piece, pieceIndex) => {
      const structure = piece.kind === 'json-structure';
      // between literals only numbers can hold anything to find: `{`, `:`, `true`, `null` cannot
      if (!piece.text || (structure && !/\d/.test(piece.text))) return;
      push(piece.text, item.type === 'function-call-output', index, pieceIndex, structure);
    });
  });

  function edits(changed: ReadonlyMap<number, string>): PromptEdit[] {
    const byItem = new Map<number, Map<number, string>>();
    for (const [segmentIndex, text] of changed) {
      const { item, part } = segments[segmentIndex]!.origin;
      const parts = byItem.get(item) ?? new Map<number, string>();
      byItem.set(item, parts);
      parts.set(part, text);
    }
    const list: PromptEdit[] = [];
    for (const [item, parts] of byItem) {
      const piecesOf = pieces.get(item);
      // A JSON field's pieces are joined into its new text here, where they were split.
      if (piecesOf) list.push({ item, part: -1, text: joinJsonText(piecesOf, parts) });
      else for (const [part, text] of parts) list.push({ item, part, text });
    }
    return list;
  }

  return {
    segments,
    edits,
    rebuild: (changed) => applyPromptEdits(request, edits(changed)),
  };
}

/** The request with `edits` written in, copying only the objects on the path to a change. */
export function applyPromptEdits(
  request: GenerationRequest,
  edits: readonly PromptEdit[],
): GenerationRequest {
  if (edits.length === 0) return request;
  const byItem = new Map<number, PromptEdit[]>();
  for (const edit of edits) {
    const list = byItem.get(edit.item) ?? [];
    list.push(edit);
    byItem.set(edit.item, list);
  }
  const rebuilt: GenerationRequest = { ...request };
  const instructionEdits = byItem.get(INSTRUCTIONS);
  if (instructionEdits && request.instructionSections) {
    const texts = new Map(instructionEdits.map((edit) => [edit.part, edit.text]));
    rebuilt.instructionSections = request.instructionSections.map((section, index) => {
      const text = texts.get(index);
      return text !== undefined ? { ...section, text } : section;
    });
    rebuilt.instructions = rebuilt.instructionSections.map((section) => section.text).join('\n\n');
  } else if (instructionEdits?.[0]) rebuilt.instructions = instructionEdits[0].text;
  if ([...byItem.keys()].some((item) => item !== INSTRUCTIONS)) {
    rebuilt.input = request.input.map((item, index) => {
      const list = byItem.get(index);
      return list ? rewriteItem(item, list) : item;
    });
  }
  return rebuilt;
}

function rewriteItem(item: InputItem, edits: readonly PromptEdit[]): InputItem {
  if (item.type === 'message') {
    const texts = new Map(edits.map((edit) => [edit.part, edit.text]));
    const content = item.content.map((part, index): ContentPart => {
      const text = texts.get(index);
      return text !== undefined && part.type === 'text' ? { ...part, text } : part;
    });
    return { ...item, content };
  }
  const text = edits[0]!.text;
  return item.type === 'function-call' ? { ...item, arguments: text } : { ...item, output: text };
}
