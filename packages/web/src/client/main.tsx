import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App.tsx'
import { watchAddressForToken } from './token.ts'
import './styles.css'

// Before anything reads the address (App reads `#s=`).
watchAddressForToken()

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
