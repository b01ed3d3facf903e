// Light and dark: the system preference by default, overridden by the header toggle (kept in
// localStorage). The effective theme is an attribute on <html> that CSS and charts read.

export type ThemeMode = 'auto' | 'light' | 'dark';
export type Theme = 'light' | 'dark';

const kKey = 'tokenradar.theme';
const media = window.matchMedia('(prefers-color-scheme: dark)');

export function themeMode(): ThemeMode {
  let v: string | null = null;
  try {
    v = localStorage.getItem(kKey);
  } catch {
    // Storage disabled: follow the system.
  }
  return v === 'light' || v === 'dark' ? v : 'auto';
}

export function effectiveTheme(): Theme {
  const mode = themeMode();
  if (mode !== 'auto') return mode;
  return media.matches ? 'dark' : 'light';
}

export function applyTheme(): void {
  document.documentElement.dataset.theme = effectiveTheme();
  document.documentElement.dataset.themeMode = themeMode();
}

export function setThemeMode(mode: ThemeMode): void {
  try {
    if (mode === 'auto') localStorage.removeItem(kKey);
    else localStorage.setItem(kKey, mode);
  } catch {
    // Storage disabled: the choice lasts until reload.
  }
  applyTheme();
}

export function nextMode(mode: ThemeMode): ThemeMode {
  return mode === 'auto' ? 'light' : mode === 'light' ? 'dark' : 'auto';
}

/** Calls `fn` when the system preference changes. */
export function onSystemThemeChange(fn: () => void): void {
  media.addEventListener('change', fn);
}

/** A CSS custom property of the current theme (charts draw on canvas and need real colours). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
