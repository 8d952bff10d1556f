// render/submit.js — a small form to submit an app (POST /ws/v1/cluster/apps):
// name, queue, project, priority and one ask — count × memory × vcores ×
// GPUs, running for a duration (simulated nodes) or a shell command (agents),
// guaranteed or opportunistic (it may wait in a busy agent's queue).
// "Quote" asks the pricing policy what it would cost (POST /ws/v1/quota/quote)
// for its duration (an hour for a command) and submits nothing.

import { sendJson, segment } from '../api.js';
import { el } from '../dom.js';
import { showError, showNotice } from '../notice.js';

const field = (label, input, wide) => el('label', { class: wide ? 'field field-wide' : 'field' }, el('span', null, label), input);
const number = (name, value, min, max) =>
  el('input', { type: 'number', name, value, min, max, step: 1, required: true });

export function renderSubmitForm(container) {
  const inputs = {
    name: el('input', { name: 'name', value: 'web-ui-app', required: true, maxlength: 256 }),
    queue: el('input', { name: 'queue', value: 'default', required: true, maxlength: 256 }),
    project: el('input', { name: 'project', required: true, maxlength: 256, placeholder: 'charged project' }),
    priority: number('priority', 0, -1000000, 1000000),
    count: number('count', 1, 1, 100000),
    // The CLI's default (weft app run --memory 512mb).
    memory: number('memory_mb', 512, 1, 1073741824),
    vcores: number('vcores', 1, 1, 4096),
    gpus: number('gpus', 0, 0, 1024),
    duration: el('input', { type: 'number', name: 'duration_ms', value: 30000, min: 1, step: 1 }),
    shell: el('input', { name: 'shell', placeholder: 'e.g. sleep 30' }),
    executionType: el('select', { name: 'execution_type' },
      el('option', { value: 'guaranteed' }, 'guaranteed'),
      el('option', { value: 'opportunistic' }, 'opportunistic (may wait at a busy agent)')),
  };
  const submit = el('button', { type: 'submit' }, 'Submit app');
  const quoted = el('output', { class: 'quote', 'aria-live': 'polite' });
  const quote = el('button', { type: 'button', onclick: async () => {
    const body = request();
    if (!body) return;
    quote.disabled = true;
    try {
      const answer = await sendJson('POST', '/ws/v1/quota/quote', { app: body });
      const ask = answer.asks[0];
      quoted.textContent = `≈ ${answer.credits.toFixed(2)} credits for ${ask.containers} × ${ask.duration_ms / 1000} s `
        + `(project ${answer.project} has ${answer.credits_left.toFixed(2)} left)`;
    } catch (error) {
      showError(error, 'quote the app');
    } finally {
      quote.disabled = false;
    }
  } }, 'Quote');
  // The app the form describes, or null (with a notice) when it is incomplete.
  const request = () => {
    const ask = {
      count: Number(inputs.count.value),
      memory_mb: Number(inputs.memory.value),
      vcores: Number(inputs.vcores.value),
      gpus: Number(inputs.gpus.value),
      execution_type: inputs.executionType.value,
    };
    if (inputs.shell.value.trim()) ask.command = { shell: inputs.shell.value };
    if (inputs.duration.value) ask.duration_ms = Number(inputs.duration.value);
    if (!ask.command && !ask.duration_ms) {
      showNotice('An ask needs a duration or a shell command.', 'error');
      return null;
    }
    return {
      name: inputs.name.value,
      queue: inputs.queue.value,
      project: inputs.project.value,
      priority: Number(inputs.priority.value),
      asks: [ask],
    };
  };
  const form = el('form', { class: 'submit-form', onsubmit: async (event) => {
    event.preventDefault();
    const body = request();
    if (!body) return;
    submit.disabled = true;
    try {
      const { app } = await sendJson('POST', '/ws/v1/cluster/apps', body);
      showNotice(`Submitted ${app.id} (${app.state}).`, 'ok');
      location.hash = `#/app/${segment(app.id)}`;
    } catch (error) {
      showError(error, 'submit the app');
    } finally {
      submit.disabled = false;
    }
  } },
  field('Name', inputs.name), field('Queue', inputs.queue), field('Project', inputs.project), field('Priority', inputs.priority),
  field('Containers', inputs.count), field('Memory (MB)', inputs.memory), field('VCores', inputs.vcores), field('GPUs', inputs.gpus),
  field('Duration (ms)', inputs.duration), field('Execution type', inputs.executionType),
  field('Shell command (agents)', inputs.shell, 'field-wide'),
  submit, quote, quoted);
  container.replaceChildren(form);
}
