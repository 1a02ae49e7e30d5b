import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestFor } from '../../../src/gateway/pipeline/endpoint-request.js';

const generation = {
  input: [
    { type: 'message' as const, role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }] },
  ],
  maxOutputTokens: 100,
  temperature: 0.3,
  topP: 0.9,
  topK: 5,
  stop: ['END'],
  seed: 7,
  frequencyPenalty: 0.1,
  presencePenalty: 0.2,
  reasoning: { effort: 'high' as const },
};

describe('the request an endpoint is sent', () => {
  it('leaves out the sampling parameters and reasoning the endpoint does not list', () => {
    // OpenAI's gpt-5 family lists no temperature or top_p (OpenAI refuses them there).
    const gpt5 = requestFor(generation, {
      provider_model_id: 'gpt-5',
      supported_parameters: ['max_tokens', 'reasoning', 'include_reasoning', 'seed', 'tools', 'tool_choice'],
    });
    assert.equal(gpt5.model, 'gpt-5');
    assert.deepEqual(
      [gpt5.temperature, gpt5.topP, gpt5.frequencyPenalty, gpt5.presencePenalty],
      [undefined, undefined, undefined, undefined],
    );
    // The catalogue's lists leave out stop, seed and top_k for many endpoints that take them: those go.
    assert.deepEqual([gpt5.seed, gpt5.stop, gpt5.topK], [7, ['END'], 5]);
    assert.equal(gpt5.maxOutputTokens, 100, 'the output cap always goes');
    assert.deepEqual(gpt5.reasoning, { effort: 'high' });
    // gpt-4o takes sampling but no reasoning options.
    const gpt4o = requestFor(generation, {
      provider_model_id: 'gpt-4o',
      supported_parameters: ['max_tokens', 'temperature', 'top_p', 'stop', 'seed'],
    });
    assert.equal(gpt4o.reasoning, undefined);
    assert.equal(gpt4o.temperature, 0.3);
    // A listed `reasoning` marks a model that reasons, asked for reasoning or not.
    assert.equal(gpt5.reasoningModel, true);
    assert.equal(gpt4o.reasoningModel, false);
    const { reasoning: _left, ...plain } = generation;
    assert.equal(
      requestFor(plain, { provider_model_id: 'gpt-5', supported_parameters: ['reasoning'] }).reasoningModel,
      true,
    );
    // `include_reasoning` alone is enough for reasoning options.
    assert.deepEqual(
      requestFor(generation, { provider_model_id: 'm', supported_parameters: ['include_reasoning'] })
        .reasoning,
      { effort: 'high' },
    );
    // The caller's request is not changed.
    assert.equal(generation.temperature, 0.3);
  });

  it('marks a json_schema format for an endpoint that does not list structured outputs, never drops it', () => {
    const format = { type: 'json_schema' as const, name: 'x', schema: { type: 'object' } };
    const listed = requestFor(
      { ...generation, responseFormat: format },
      {
        provider_model_id: 'claude-sonnet-4-5',
        supported_parameters: ['structured_outputs', 'response_format'],
      },
    );
    assert.equal(listed.structuredOutputs, undefined);
    // Claude Sonnet 4 on Vertex lists neither: Anthropic would refuse the schema there.
    const unlisted = requestFor(
      { ...generation, responseFormat: format },
      { provider_model_id: 'claude-sonnet-4', supported_parameters: ['max_tokens', 'tools'] },
    );
    assert.equal(unlisted.structuredOutputs, false);
    assert.deepEqual(unlisted.responseFormat, format);
    // json_object needs no schema support; an endpoint without a list is sent everything.
    const object = requestFor(
      { ...generation, responseFormat: { type: 'json_object' } },
      { provider_model_id: 'm', supported_parameters: ['max_tokens'] },
    );
    assert.equal(object.structuredOutputs, undefined);
    const bare = requestFor(
      { ...generation, responseFormat: format },
      { provider_model_id: 'm', supported_parameters: [] },
    );
    assert.equal(bare.structuredOutputs, undefined);
    // A strict tool is marked the same way; a tool that is not strict is not.
    const tool = { type: 'function' as const, name: 't', parameters: { type: 'object' } };
    const strictTool = requestFor(
      { ...generation, tools: [tool, { ...tool, name: 's', strict: true }] },
      { provider_model_id: 'claude-sonnet-4', supported_parameters: ['max_tokens', 'tools'] },
    );
    assert.equal(strictTool.structuredOutputs, false);
    const looseTool = requestFor(
      { ...generation, tools: [tool] },
      { provider_model_id: 'claude-sonnet-4', supported_parameters: ['max_tokens', 'tools'] },
    );
    assert.equal(looseTool.structuredOutputs, undefined);
  });

  it('sends everything to an endpoint that lists nothing (configured without a list)', () => {
    const all = requestFor(generation, { provider_model_id: 'custom', supported_parameters: [] });
    assert.deepEqual(all, { ...generation, model: 'custom' });
  });

  it('sends image options only to a model whose output modalities list image', () => {
    const withOptions = { ...generation, imageConfig: { aspectRatio: '16:9' } };
    const endpoint = { provider_model_id: 'gemini', supported_parameters: [] };
    const imageModel = requestFor(withOptions, endpoint, ['image', 'text']);
    assert.deepEqual([imageModel.imageConfig, imageModel.imageModel], [{ aspectRatio: '16:9' }, true]);
    const textModel = requestFor(withOptions, endpoint, ['text']);
    // A text model is not marked: only image models are (the Gemini adapter reads `imageModel === true`).
    assert.deepEqual([textModel.imageConfig, textModel.imageModel], [undefined, undefined]);
    // Output modalities not known: sent as given, and the model not marked either way.
    const unknown = requestFor(withOptions, endpoint);
    assert.deepEqual([unknown.imageConfig, unknown.imageModel], [{ aspectRatio: '16:9' }, undefined]);
  });
});
