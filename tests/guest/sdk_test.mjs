console.log('stub')
